#include "autograd/core/tape.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include "autograd/core/anomaly.h"
#include "autograd/base/checks.h"
#include "autograd/core/routing.h"

namespace tapegrad {

struct GradientTape::Recorder {
  std::vector<std::shared_ptr<const Entry>> entries;  // shared: nested tapes may hold one entry
  std::vector<std::uint64_t> ids;                     // entries[i]->output->producer, increasing; kept after release
  // Set by a destructor that ran on another thread; the owning thread drops the recorder.
  std::atomic<bool> ended{false};
  // Why backward cannot run: empty while it can.
  std::string spent;
  // A walk is going over entries: a hook must not start another on this tape or clear it.
  bool walking = false;
  // How many NoGradGuards were alive on the thread when the tape began: it records only while
  // exactly those are, so a guard pauses the tapes made before it, not one made inside it (a
  // gradient hook, which runs under the walk's guard, may build and differentiate a graph).
  int guards_at_start = 0;
};

namespace {
thread_local std::vector<std::shared_ptr<GradientTape::Recorder>> active_recorders;
thread_local int pause_depth = 0;

// Drops recorders whose tape was destroyed on another thread.
void forget_ended_recorders() {
  std::erase_if(active_recorders, [](const auto& r) { return r->ended.load(std::memory_order_acquire); });
}

// Whether node is a non-leaf whose producing entry is among ids [begin, end) (increasing).
bool produced_outside(const NodeBase& node, const std::uint64_t* begin, const std::uint64_t* end) {
  return !node.is_leaf && !std::binary_search(begin, end, node.producer);
}

std::string describe_site(const GradientTape::Entry& e) { return describe_call(e.op, e.where); }
}  // namespace

bool is_recording() {
  if (active_recorders.empty()) return false;
  forget_ended_recorders();
  return std::any_of(active_recorders.begin(), active_recorders.end(),
                     [](const auto& r) { return r->guards_at_start == pause_depth; });
}

int detail::RecordingPauses::get() { return pause_depth; }
void detail::RecordingPauses::set(int depth) { pause_depth = depth; }

GradientTape::GradientTape(bool persistent)
    : recorder_(std::make_shared<Recorder>()), owner_(std::this_thread::get_id()), persistent_(persistent) {
  recorder_->guards_at_start = pause_depth;
  active_recorders.push_back(recorder_);
}

GradientTape::~GradientTape() {
  if (std::this_thread::get_id() != owner_) {
    recorder_->ended.store(true, std::memory_order_release);
    return;
  }
  // Tapes normally die in reverse order of creation, but nothing requires it.
  const auto it = std::find(active_recorders.begin(), active_recorders.end(), recorder_);
  if (it != active_recorders.end()) active_recorders.erase(it);
}

std::size_t GradientTape::size() const { return recorder_->entries.size(); }

std::vector<std::shared_ptr<const GradientTape::Entry>> GradientTape::entries() const {
  std::vector<std::shared_ptr<const Entry>> live;
  for (const auto& e : recorder_->entries)
    if (e) live.push_back(e);
  return live;
}

void GradientTape::clear() {
  // Another thread's clear would race with this thread's recording and walking (two gradient hooks
  // on a leaf that two threads walk into, each clearing this tape, freed its entries twice).
  if (std::this_thread::get_id() != owner_) {
    throw TapeError("GradientTape::clear: this tape belongs to the thread that created it; clear it on that thread");
  }
  if (recorder_->walking) {
    throw TapeError("GradientTape::clear: called while this tape's backward is walking its entries (from a gradient "
                    "hook); clear it after backward returns");
  }
  recorder_->entries.clear();
  recorder_->ids.clear();
  recorder_->spent.clear();
}

std::uint64_t GradientTape::next_entry_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void GradientTape::record(std::shared_ptr<const Entry> entry) {
  forget_ended_recorders();
  for (const auto& recorder : active_recorders) {
    if (recorder->guards_at_start != pause_depth) continue;
    recorder->entries.push_back(entry);
    recorder->ids.push_back(entry->output->producer);
  }
}

template <class T>
void GradientTape::backward(const Tensor<T>& loss) {
  require_defined(loss, "backward", "loss");
  if (loss.numel() != 1) {
    throw ShapeError("backward: the loss " + loss.describe() +
                     " has more than one element; pass a seed of its shape: backward(output, seed)");
  }
  xt::xarray<T> seed = xt::xarray<T>::from_shape(loss.value().shape());
  seed.fill(T(1));
  backward(loss, std::move(seed));
}

template <class T>
void GradientTape::check_can_walk(const Tensor<T>& output) const {
  if (std::this_thread::get_id() != owner_) {
    throw TapeError("backward: this tape belongs to the thread that created it; run backward on that thread "
                    "(each thread records its own ops on its own tapes)");
  }
  if (!recorder_->spent.empty()) throw TapeError("backward: " + recorder_->spent);
  if (recorder_->walking) {
    throw TapeError("backward: called while this tape's own backward is walking its entries (from a gradient hook); "
                    "a hook may run a backward on another tape, not on the one whose walk calls it");
  }
  if (!output.requires_grad()) {
    throw TapeError("backward: output " + output.describe() +
                    " does not require a gradient (no input required one, or no tape was recording)");
  }
  const NodeBase& root = *output.node();
  if (produced_outside(root, recorder_->ids.data(), recorder_->ids.data() + recorder_->ids.size())) {
    throw TapeError("backward: output " + output.describe() + " (from " + root.op + ") was not recorded by this tape");
  }
}

template <class T>
void GradientTape::backward(const Tensor<T>& output, const xt::xarray<T>& seed) {
  backward_from(output, seed);
}

template <class T>
void GradientTape::backward(const Tensor<T>& output, xt::xarray<T>&& seed) {
  backward_from(output, std::move(seed));
}

template <class T, class Seed>
void GradientTape::backward_from(const Tensor<T>& output, Seed&& seed) {
  require_defined(output, "backward", "output");
  check_can_walk(output);
  if (!std::equal(seed.shape().begin(), seed.shape().end(), output.value().shape().begin(), output.value().shape().end())) {
    throw ShapeError("backward: seed of shape " + format_shape(seed.shape()) + " does not match output " + output.describe());
  }
  detail::Walk scope(nullptr, /*create_graph=*/false);
  seed_and_walk(output, std::forward<Seed>(seed), scope);
}

template <class T, class Seed>
void GradientTape::seed_and_walk(const Tensor<T>& output, Seed&& seed, detail::Walk& scope) {
  // Intermediates start every walk clean: a gradient retained from an earlier walk must not
  // flow back a second time.
  for (const auto& e : recorder_->entries) e->output->clear_grad();
  if (is_anomaly_enabled()) [[unlikely]] detail::check_gradient(*output.node(), seed, "the seed passed to backward");
  try {
    if (scope.creates_graph()) detail::seed_graph(*output.node(), xt::xarray<T>(std::forward<Seed>(seed)));
    else detail::seed(*output.node(), std::forward<Seed>(seed));
    walk(scope);
  } catch (...) {
    // Gradients in flight (the seed among them) are dropped: nothing will walk them. Retained
    // ones keep what they hold; a seed still lent to one (the walk threw before the output's op
    // read it) is copied, as it must not outlive the call.
    for (const auto& e : recorder_->entries) {
      if (e && !e->output->retains_grad) e->output->clear_grad();
    }
    output.node()->own_grad();
    // The walk stopped half-way: some entries are released, some gradients are in flight. Nothing
    // can resume it, so a later backward says why instead of reading released entries.
    recorder_->entries.clear();
    recorder_->ids.clear();
    recorder_->spent = "an earlier backward on this tape threw, and the tape released its entries; record the "
                       "computation again under a new tape";
    throw;
  }
}

template <class T>
std::vector<Tensor<T>> GradientTape::gradient(const Tensor<T>& target, const std::vector<Tensor<T>>& sources,
                                              const GradientOptions& options) {
  require_defined(target, "gradient", "target");
  if (target.numel() != 1) {
    throw ShapeError("gradient: the target " + target.describe() + " has more than one element; reduce it first (e.g. sum)");
  }
  for (std::size_t i = 0; i < sources.size(); ++i) {
    require_defined(sources[i], "gradient", "sources[" + std::to_string(i) + "]");
    if (!sources[i].requires_grad()) {
      throw TapeError("gradient: source " + std::to_string(i) + " " + sources[i].describe() +
                      " does not require a gradient, so the target cannot depend on it through this tape");
    }
    const NodeBase& node = *sources[i].node();
    if (produced_outside(node, recorder_->ids.data(), recorder_->ids.data() + recorder_->ids.size())) {
      throw TapeError("gradient: source " + std::to_string(i) + " " + sources[i].describe() + " (from " + node.op +
                      ") was not recorded by this tape");
    }
  }
  check_can_walk(target);
  xt::xarray<T> seed = xt::xarray<T>::from_shape(target.value().shape());
  seed.fill(T(1));
  // A leaf source's gradient is kept by the walk (routing.h), so no grad() changes. An intermediate
  // source is retained for the walk, in its own grad() in a first-order walk: whatever grad()
  // held is set aside and put back after. Other leaves drop what reaches them.
  struct SetAside {
    Tensor<T> tensor;
    std::optional<xt::xarray<T>> grad;
    bool retains_grad;
  };
  std::vector<SetAside> set_aside;
  std::vector<const NodeBase*> leaves;
  std::vector<Tensor<T>> collected(sources.size());  // undefined: the target does not depend on it
  for (const auto& source : sources) {
    const auto& node = source.node();
    if (node->is_leaf) {
      leaves.push_back(node.get());
    } else if (std::none_of(set_aside.begin(), set_aside.end(), [&](const auto& s) { return s.tensor.same_node(source); })) {
      set_aside.push_back({source, node->take_grad(), node->retains_grad});
      node->retains_grad = true;
    }
  }
  const auto restore = [&] {
    for (auto& s : set_aside) {
      const auto& node = s.tensor.node();
      node->retains_grad = s.retains_grad;
      std::optional<xt::xarray<T>> retained = node->take_grad();
      node->grad = std::move(s.grad);  // as it was, without running its hooks again
      if (options.create_graph || !retained) continue;
      const Tensor<T> g(std::move(*retained));
      for (std::size_t i = 0; i < sources.size(); ++i) if (sources[i].same_node(s.tensor)) collected[i] = g;
    }
  };
  try {
    detail::Walk scope(&leaves, options.create_graph);
    if (target.is_leaf()) {
      // Nothing to walk: d target / d target is 1.
      for (std::size_t i = 0; i < sources.size(); ++i) if (sources[i].same_node(target)) collected[i] = Tensor<T>(seed);
    } else {
      seed_and_walk(target, seed, scope);
      for (std::size_t i = 0; i < sources.size(); ++i) {
        if (collected[i].defined() || !(options.create_graph || sources[i].is_leaf())) continue;
        const Tensor<T> g = scope.collect(sources[i]);
        for (std::size_t j = i; j < sources.size(); ++j) if (sources[j].same_node(sources[i])) collected[j] = g;
      }
    }
  } catch (...) {
    restore();
    throw;
  }
  restore();
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!collected[i].defined()) collected[i] = Tensor<T>::zeros(sources[i].shape());
  }
  return collected;
}

namespace {

// TapeError when an input of `e` was written in place after the op ran, or when a gradient is
// about to reach a non-leaf whose producer is not among `ids` (the entries older than `e` on
// this tape). Runs just before e's backward, which is the last moment the answer can still be
// right.
void check_entry(const GradientTape::Entry& e, const std::uint64_t* ids_begin, const std::uint64_t* ids_end) {
  const auto modified = [&](const NodeBase& node, std::uint64_t saved) {
    return TapeError("backward: tensor " + node.describe_origin() + " was modified in place (now version " +
                     std::to_string(node.version) + ") after " + describe_site(e) + " read it at version " +
                     std::to_string(saved) + "; its backward would use the new value. Run the forward again "
                     "after the in-place edit, or edit a detach()ed copy");
  };
  if (e.output->version != 0) throw modified(*e.output, 0);
  for (const auto& input : e.inputs) {
    if (input.node->version != input.version) throw modified(*input.node, input.version);
    if (input.node->requires_grad && produced_outside(*input.node, ids_begin, ids_end)) {
      throw TapeError("backward: the gradient flowing back through " + describe_site(e) + " reaches tensor " +
                      input.node->describe_origin() + ", whose op is not on this tape (it ran before this tape began, "
                      "or under a tape that has ended), so the gradient would stop there silently. Compute it "
                      "while this tape is alive, or detach() it to use it as a constant");
    }
  }
}

}  // namespace

void GradientTape::walk(detail::Walk& scope) {
  // A create_graph walk records what the closures compute; a first-order one records nothing.
  std::optional<NoGradGuard> no_recording;
  if (!scope.creates_graph()) no_recording.emplace();
  // A create_graph walk keeps the entries it walks (PyTorch's create_graph implies retain_graph):
  // the gradients it returns are differentiated through them again.
  const bool release = !persistent_ && !scope.creates_graph();
  auto& entries = recorder_->entries;
  scope.walk_over(entries);
  recorder_->walking = true;
  struct WalkEnds {
    bool& walking;
    ~WalkEnds() { walking = false; }
  } walk_ends{recorder_->walking};
  // Entries are appended in creation order, which is a topological order: walking them newest
  // to oldest visits every output after all of its consumers. A create_graph walk appends the
  // backward's own entries as it goes; they are newer than where the walk started, so it does
  // not visit them.
  // Once an entry's backward has run, every consumer of its output has been visited, so the
  // output's gradient is final: it is dropped at once (unless retained), and a non-persistent
  // tape drops the entry too, freeing what its closure saved. Peak memory during backward is
  // then the forward's saved tensors plus the gradients still in flight, not all of them.
  for (std::size_t i = entries.size(); i-- > 0;) {
    const std::shared_ptr<const Entry> held = entries[i];  // the vector may grow while e runs
    const Entry& e = *held;
    if (scope.creates_graph() ? scope.keeps(*e.output) : e.output->has_grad()) {
      const std::uint64_t* ids = recorder_->ids.data();
      check_entry(e, ids, ids + i);
      scope.entering(e.output->producer);
      const detail::BackwardSite site(e.op, e.where);  // names this op in anomaly reports
      try {
        e.backward();
      } catch (const TapeError& error) {  // e.g. a custom op's backward handing back a mis-shaped gradient
        throw TapeError(std::string("backward of ") + e.op + ": " + error.what());
      }
    }
    if (!e.output->retains_grad) e.output->clear_grad();
    if (release) entries[i].reset();
    scope.passed(i);
  }
  scope.finish();
  if (release) {
    entries.clear();
    recorder_->ids.clear();
    recorder_->spent = "this tape was already used and released its entries; make it "
                       "GradientTape(/*persistent=*/true) to call backward more than once";
  }
}

template void GradientTape::backward<float>(const Tensor<float>&);
template void GradientTape::backward<double>(const Tensor<double>&);
template void GradientTape::backward<float>(const Tensor<float>&, const xt::xarray<float>&);
template void GradientTape::backward<double>(const Tensor<double>&, const xt::xarray<double>&);
template void GradientTape::backward<float>(const Tensor<float>&, xt::xarray<float>&&);
template void GradientTape::backward<double>(const Tensor<double>&, xt::xarray<double>&&);
template std::vector<Tensor<float>> GradientTape::gradient<float>(const Tensor<float>&, const std::vector<Tensor<float>>&,
                                                                  const GradientOptions&);
template std::vector<Tensor<double>> GradientTape::gradient<double>(const Tensor<double>&,
                                                                    const std::vector<Tensor<double>>&,
                                                                    const GradientOptions&);

}  // namespace tapegrad
