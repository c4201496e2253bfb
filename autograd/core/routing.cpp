#include "autograd/core/routing.h"

#include <algorithm>
#include <string>

#include "autograd/core/anomaly.h"
#include "autograd/kernels/simd/map.h"
// The one use of an op below the ops' floor: a create_graph walk sums two recorded gradients
// with the recorded add, so that the sum is differentiated again.
#include "autograd/ops/operators.h"

namespace tapegrad::detail {

namespace {

thread_local Walk* current_walk = nullptr;

// Whether `intermediate`'s op is among `entries` (a tape's, oldest first, so in increasing producer
// order; those a walk released are null, and newer than any intermediate still to be walked).
bool on_tape(const std::vector<std::shared_ptr<const GradientTape::Entry>>& entries, const NodeBase& intermediate) {
  const auto it = std::lower_bound(entries.begin(), entries.end(), intermediate.producer,
                                   [](const auto& e, std::uint64_t id) { return e && e->output->producer < id; });
  return it != entries.end() && *it && (*it)->output->producer == intermediate.producer;
}

template <class T>
Tensor<T> as_tensor(const HeldGradient& gradient) {
  return Tensor<T>(std::static_pointer_cast<Node<T>>(gradient.get()));
}

template <class T>
void require_replacement_shape(const Node<T>& x, std::size_t hook, const Shape& shape) {
  if (shape != x.value_shape()) {
    throw TapeError("gradient hook " + std::to_string(hook + 1) + " of tensor " + x.describe() +
                    " returned a gradient of shape " + format_shape(shape) +
                    "; a replacement must have the tensor's shape");
  }
}

template <class T>
xt::xarray<T> replacement_value(const Node<T>& x, std::size_t hook, const Tensor<T>& replaced) {
  if (!replaced.defined()) {
    throw TapeError("gradient hook " + std::to_string(hook + 1) + " of tensor " + x.describe() +
                    " returned an undefined tensor; return std::nullopt to keep the gradient");
  }
  return replaced.value();
}

// A hooked leaf's (or a source's) total, once the walk has passed the oldest entry reading it:
// its hooks run on it, then it is added to grad() (backward) or kept for gradient() to collect.
template <class T>
void finish_leaf(Walk& walk, NodeBase& leaf_base) {
  auto& leaf = static_cast<Node<T>&>(leaf_base);
  HeldGradient total = walk.take(leaf);
  if (walk.creates_graph()) {
    const Tensor<T> g = run_hooks_recorded(leaf, as_tensor<T>(total));
    walk.put(leaf, HeldGradient(g.node()));
    return;
  }
  xt::xarray<T>& value = static_cast<Node<T>&>(*total.get()).value;
  if (auto replaced = run_hooks(leaf, value)) value = std::move(*replaced);
  if (walk.has_sources()) walk.put(leaf, std::move(total));
  else leaf.accumulate_grad(std::move(value));
}

// A leaf gradient the walk keeps apart (a hooked leaf's in backward, a source's in gradient()),
// added to the total this walk holds for it. Every kept leaf is finished, whatever hooks it has
// by then: another thread may remove (or add) its hooks meanwhile, and a backward's total must
// still reach grad().
template <class T>
void keep_leaf_gradient(Walk& walk, Node<T>& leaf, xt::xarray<T>&& g) {
  if (HeldGradient* total = walk.kept_for(leaf)) {
    xt::xarray<T>& sum = static_cast<Node<T>&>(*total->get()).value;
    kernels::add_into(sum.size(), sum.data(), g.data());
    return;
  }
  walk.keep_new(leaf, HeldGradient(std::make_shared<Node<T>>(std::move(g))), &finish_leaf<T>);
}

template <class T>
void route_recorded(Walk& walk, Node<T>& x, Tensor<T> g) {
  x.require_gradient_shape(g.value());
  if (is_anomaly_enabled()) [[unlikely]] check_gradient(x, g.value());
  if (x.is_leaf && !walk.is_source(x)) return;
  if (!x.is_leaf) walk.check_not_newer(x);
  if (HeldGradient* previous = walk.kept_for(x)) {
    *previous = HeldGradient(add(as_tensor<T>(*previous), g).node());
    return;
  }
  walk.keep_new(x, HeldGradient(g.node()), x.is_leaf ? &finish_leaf<T> : nullptr);
}

}  // namespace

// ---- the walk ----------------------------------------------------------------------------------

Walk::Walk(const std::vector<const NodeBase*>* sources, bool create_graph)
    : sources_(sources), create_graph_(create_graph), previous_(current_walk) {
  current_walk = this;
}

Walk::~Walk() {
  if (current_walk == this) current_walk = previous_;
}

bool walk_running() { return current_walk != nullptr; }

bool walk_creates_graph() { return current_walk != nullptr && current_walk->creates_graph(); }

bool Walk::is_source(const NodeBase& leaf) const {
  return sources_ != nullptr && std::find(sources_->begin(), sources_->end(), &leaf) != sources_->end();
}

void Walk::check_not_newer(const NodeBase& intermediate) const {
  if (intermediate.producer >= running_entry_) {
    throw TapeError("a gradient reached tensor " + intermediate.describe_origin() + ", whose op the walk has already "
                    "passed, so it would be dropped: the op adding it does not list the tensor among its inputs (a "
                    "custom op must pass every tensor it adds a gradient into to custom_op)");
  }
  if (entries_ == nullptr || on_tape(*entries_, intermediate)) return;
  throw TapeError("a gradient reached tensor " + intermediate.describe_origin() + ", whose op is not on the walking "
                  "tape, so the walk would never pass it on: the op adding it does not list the tensor among its "
                  "inputs (a custom op must pass every tensor it adds a gradient into to custom_op)");
}



HeldGradient Walk::take(const NodeBase& node) {
  const auto it = kept_.find(&node);
  if (it == kept_.end()) return {};
  HeldGradient gradient = std::move(it->second);
  kept_.erase(it);
  return gradient;
}

HeldGradient* Walk::kept_for(const NodeBase& node) {
  if (!finished_.empty() && finished_.contains(&node)) {
    throw TapeError("backward: a gradient reached leaf " + node.describe_origin() + " after the walk had passed the "
                    "oldest op that reads it and had run its hooks: the op adding it does not list the leaf among "
                    "its inputs (a custom op must pass every tensor it adds a gradient into to custom_op)");
  }
  const auto it = kept_.find(&node);
  return it == kept_.end() ? nullptr : &it->second;
}

void Walk::keep_new(NodeBase& node, HeldGradient gradient, FinishLeaf finish_leaf) {
  kept_.emplace(&node, std::move(gradient));
  if (finish_leaf == nullptr) return;
  deferred_.push_back({node.shared_from_this(), oldest_reader(node), finish_leaf});
  std::push_heap(deferred_.begin(), deferred_.end(), Walk::finishes_later);
}

std::size_t Walk::oldest_reader(const NodeBase& leaf) {
  if (entries_ == nullptr) return 0;
  if (!scanned_) {
    scanned_ = true;
    // Oldest first, so the first entry seen reading a leaf is its oldest reader. Entries the
    // walk has released are null; they were newer than any still to come.
    for (std::size_t i = 0; i < entries_->size(); ++i) {
      if (const auto& e = (*entries_)[i]) {
        for (const auto& input : e->inputs) {
          if (input.node->is_leaf) oldest_reader_.try_emplace(input.node.get(), i);
        }
      }
    }
  }
  // A leaf no entry lists (none should: make_result lists every tensor input) waits for the end.
  const auto it = oldest_reader_.find(&leaf);
  return it == oldest_reader_.end() ? 0 : it->second;
}

void Walk::passed(std::size_t index) {
  while (!deferred_.empty() && deferred_.front().final_after >= index) {
    std::pop_heap(deferred_.begin(), deferred_.end(), Walk::finishes_later);
    const Deferred leaf = std::move(deferred_.back());
    deferred_.pop_back();
    finished_.insert(leaf.leaf.get());
    leaf.finish(*this, *leaf.leaf);
  }
}

void Walk::finish() {
  passed(0);
  current_walk = previous_;
}

template <class T>
Tensor<T> Walk::collect(const Tensor<T>& source) {
  const HeldGradient g = take(*source.node());
  return g ? as_tensor<T>(g) : Tensor<T>();
}

// ---- arrivals ----------------------------------------------------------------------------------

template <class T>
void route(Node<T>& x, xt::xarray<T>&& g) {
  x.require_gradient_shape(g);
  if (is_anomaly_enabled()) [[unlikely]] check_gradient(x, g);
  Walk* walk = current_walk;
  if (!x.is_leaf) {
    if (walk != nullptr) walk->check_not_newer(x);
    return x.accumulate_grad(std::move(g));
  }
  if (walk == nullptr) {
    if (x.has_hooks()) {
      if (auto replaced = run_hooks(x, g)) g = std::move(*replaced);
    }
    return x.accumulate_grad(std::move(g));
  }
  if (walk->has_sources()) {
    if (walk->is_source(x)) keep_leaf_gradient(*walk, x, std::move(g));
    return;
  }
  if (x.has_hooks()) return keep_leaf_gradient(*walk, x, std::move(g));
  x.accumulate_grad(std::move(g));
}

template <class T>
void route(Node<T>& x, Tensor<T> g) {
  if (walk_creates_graph()) return route_recorded(*current_walk, x, std::move(g));
  if (g.node().use_count() == 1) route(x, std::move(g.node()->value));
  else route(x, xt::xarray<T>(g.value()));
}

template <class T>
void seed(Node<T>& output, xt::xarray<T>&& g) {
  route(output, std::move(g));
}

template <class T>
void seed(Node<T>& output, const xt::xarray<T>& g) {
  if (output.is_leaf) route(output, xt::xarray<T>(g));
  else output.lend_grad(g);
}

template <class T>
void seed_graph(Node<T>& output, xt::xarray<T> g) {
  current_walk->put(output, HeldGradient(Tensor<T>(std::move(g)).node()));
}

// ---- hooks -------------------------------------------------------------------------------------

template <class T>
std::optional<xt::xarray<T>> run_hooks(const Node<T>& x, const xt::xarray<T>& g) {
  const HookList<T> hooks = x.hooks();  // the list as it is now: a hook removing one does not free it
  std::optional<xt::xarray<T>> last;
  if (!hooks) return last;
  for (std::size_t i = 0; i < hooks->size(); ++i) {
    const RegisteredHook<T>& hook = (*hooks)[i].second;
    const xt::xarray<T>& current = last ? *last : g;
    std::optional<xt::xarray<T>> replaced;
    if (hook.on_array) {
      replaced = hook.on_array(current);
    } else if (std::optional<Tensor<T>> t = hook.on_tensor(Tensor<T>(current))) {
      replaced = replacement_value(x, i, *t);
    }
    if (!replaced) continue;
    require_replacement_shape(x, i, Shape(replaced->shape().begin(), replaced->shape().end()));
    last = std::move(replaced);
  }
  return last;
}

template <class T>
Tensor<T> run_hooks_recorded(const Node<T>& x, Tensor<T> g) {
  const HookList<T> hooks = x.hooks();
  if (!hooks) return g;
  for (std::size_t i = 0; i < hooks->size(); ++i) {
    const RegisteredHook<T>& hook = (*hooks)[i].second;
    if (hook.on_array) {
      if (hook.on_array(g.value())) {
        throw TapeError("create_graph: gradient hook " + std::to_string(i + 1) + " of tensor " + x.describe() +
                        " works on arrays and replaced the gradient; under create_graph its replacement could "
                        "not be differentiated again. Register a hook on tensors, "
                        "register_hook([](const Tensor<T>& g) -> std::optional<Tensor<T>> {...}), whose "
                        "replacement is recorded");
      }
    } else if (std::optional<Tensor<T>> replaced = hook.on_tensor(g)) {
      replacement_value(x, i, *replaced);  // defined
      require_replacement_shape(x, i, replaced->shape());
      g = std::move(*replaced);
    }
  }
  return g;
}

template <class T>
Tensor<T> take_graph_gradient(Node<T>& output) {
  return run_hooks_recorded(output, as_tensor<T>(current_walk->take(output)));
}

template <class T>
void keep_retained_graph_gradient(Node<T>& output, const Tensor<T>& g) {
  output.accumulate_grad(xt::xarray<T>(g.value()));
  current_walk->put(output, HeldGradient(g.node()));  // gradient() may have asked for this intermediate
}

void throw_not_differentiable_twice(const char* op) {
  throw TapeError(std::string("create_graph: the backward of ") + op +
                  " runs on plain arrays, so it cannot be recorded and differentiated again; write its "
                  "backward as a formula over tensors (autograd/core/custom_op.h)");
}

#define TAPEGRAD_INSTANTIATE(T)                                                        \
  template Tensor<T> Walk::collect(const Tensor<T>&);                                  \
  template void route(Node<T>&, xt::xarray<T>&&);                                      \
  template void route(Node<T>&, Tensor<T>);                                            \
  template void seed(Node<T>&, xt::xarray<T>&&);                                       \
  template void seed(Node<T>&, const xt::xarray<T>&);                                  \
  template void seed_graph(Node<T>&, xt::xarray<T>);                                   \
  template std::optional<xt::xarray<T>> run_hooks(const Node<T>&, const xt::xarray<T>&); \
  template Tensor<T> run_hooks_recorded(const Node<T>&, Tensor<T>);                    \
  template Tensor<T> take_graph_gradient(Node<T>&);                                    \
  template void keep_retained_graph_gradient(Node<T>&, const Tensor<T>&);
TAPEGRAD_INSTANTIATE(float)
TAPEGRAD_INSTANTIATE(double)
#undef TAPEGRAD_INSTANTIATE

}  // namespace tapegrad::detail
