#pragma once
// How an op records itself. Every op follows the same three steps in one function:
//   1. validate the inputs (throw ShapeError/ValueError naming the op, argument and shapes);
//   2. compute the forward value with a kernel;
//   3. return make_result(op, where, value, should_record(inputs...), backward), where `where` is
//      the op's trailing `CallSite where = std::source_location::current()` parameter (its
//      caller's file and line, for anomaly reports; autograd/call_site.h). A scalar the output
//      holds by design goes to should_record too (masked_fill's fill value): anomaly mode lets an
//      infinity through when an input already held one.
// backward is a backward formula: void(const Tensor<T>& grad_of_output), or
// void(const Tensor<T>& grad_of_output, const Tensor<T>& output) when it reads the output,
// that calls accumulate(input, vjp) for each input that requires_grad(), with vjp computed by
// tapegrad's ops. The one formula serves both walks: a first-order walk runs it with recording
// paused (its ops are plain kernels), and a create_graph walk runs it recorded, so the gradient
// can be differentiated again and is the same, bit for bit, in both. A fused op's backward is an
// op of its own (softmax_backward, ...) with a formula of its own.
// A closure on plain arrays, void(const xt::xarray<T>& grad, const xt::xarray<T>& output) calling
// accumulate(input, array), is still accepted (custom ops written before create_graph): it runs
// in first-order walks, and a create_graph walk reaching it throws TapeError naming the op.
// The formula keeps only what its backward reads (DESIGN.md: the result for exp and softmax,
// mean/rstd for layer_norm, the mask for masked_fill and dropout): an input whose value it does
// not read is captured as an edge (detail::edge), and the output's value is kept only by a
// formula that takes it. Every other value is freed when the caller's last handle to it goes.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <optional>
#include "autograd/source_location.h"
#include <utility>
#include <vector>

#include "autograd/anomaly.h"
#include "autograd/detail/graph_gradient.h"
#include "autograd/detail/walk.h"
#include "autograd/tape.h"
#include "autograd/tensor.h"

namespace tapegrad::detail {

// The value of `a`, moved out (the node is left released, value_shape() still answers), when no
// one can read it after the caller: nothing but `a` reaches the node, or nothing but edges (which
// never read a value) besides a's hold. Otherwise, in anomaly mode (which reads the inputs'
// values when it records an op), or for a value already released: nothing. A lent value is
// copied (Node::take_value).
template <class T>
std::optional<xt::xarray<T>> take_value_if_sole_reader(Tensor<T>& a) {
  Node<T>& node = *a.node();
  const bool sole_reader = a.node().use_count() == 1 || (!node.is_leaf && node.sole_value_hold());
  if (!sole_reader || node.value_released() || is_anomaly_enabled()) return std::nullopt;
  return node.take_value();
}

// What make_result needs to know about an op's inputs.
struct Recording {
  bool record = false;           // a tape is recording and an input requires a gradient
  bool inputs_hold_inf = false;  // anomaly mode only: an input already held an infinity
  // When recording: every defined tensor input with its version now, for backward's checks.
  std::vector<GradientTape::Saved> inputs;
};

template <class T>
void save_input(std::vector<GradientTape::Saved>& saved, const Tensor<T>& x) {
  if (x.defined()) saved.push_back({x.node(), x.node()->version});
}
template <std::floating_point S> void save_input(std::vector<GradientTape::Saved>&, S) {}

template <class T> bool wants_grad(const Tensor<T>& x) { return x.defined() && x.requires_grad(); }
template <std::floating_point S> bool wants_grad(S) { return false; }
template <class T> bool holds_inf(const Tensor<T>& x) { return x.defined() && holds_inf(x.value()); }
template <std::floating_point S> bool holds_inf(S s) { return std::isinf(s); }

// Inputs are tensors or scalar arguments.
template <class... Inputs>
Recording should_record(const Inputs&... inputs) {
  Recording r;
  r.record = (... || wants_grad(inputs)) && is_recording();
  if (r.record) {
    r.inputs.reserve(sizeof...(inputs));
    (save_input(r.inputs, inputs), ...);
  }
  if (is_anomaly_enabled()) [[unlikely]] r.inputs_hold_inf = (... || holds_inf(inputs));
  return r;
}

template <class T>
Recording should_record_any(const std::vector<Tensor<T>>& inputs) {
  Recording r;
  r.record = std::any_of(inputs.begin(), inputs.end(), [](const auto& x) { return wants_grad(x); }) && is_recording();
  if (r.record) {
    r.inputs.reserve(inputs.size());
    for (const auto& x : inputs) save_input(r.inputs, x);
  }
  if (is_anomaly_enabled()) [[unlikely]] {
    r.inputs_hold_inf = std::any_of(inputs.begin(), inputs.end(), [](const auto& x) { return holds_inf(x); });
  }
  return r;
}

// An op's input as a backward formula keeps it when it does not read its value: where the
// gradient goes (the node), its shape and whether it wants one, but no hold on the value, which
// is freed once nothing else holds it (NodeBase::hold_value; Flashlight's withoutData()).
// A formula captures `[a = edge(a)]` for such an input, and the Tensor itself for one it reads.
template <class T>
class Edge {
 public:
  explicit Edge(const Tensor<T>& x) : node_(x.node()) {}
  bool requires_grad() const { return node_ && node_->requires_grad; }
  Shape shape() const { return node_->value_shape(); }
  Node<T>& node() const { return *node_; }

 private:
  std::shared_ptr<Node<T>> node_;
};

template <class T> Edge<T> edge(const Tensor<T>& x) { return Edge<T>(x); }
template <class T>
std::vector<Edge<T>> edges(const std::vector<Tensor<T>>& xs) {
  return std::vector<Edge<T>>(xs.begin(), xs.end());
}

template <class T>
void accumulate(Node<T>& x, xt::xarray<T>&& g) {
  if (is_anomaly_enabled()) [[unlikely]] check_gradient(x, g);
  x.accumulate_grad(std::move(g));
}

// A backward formula's vjp: recorded into the walk under create_graph, otherwise its value is
// added (moved out when nothing else holds it).
template <class T>
void accumulate(Node<T>& x, Tensor<T> g) {
  if (walk_creates_graph()) return accumulate_in_graph(x, std::move(g));
  if (g.node().use_count() == 1) accumulate(x, std::move(g.node()->value));
  else accumulate(x, xt::xarray<T>(g.value()));
}

// Adds g into x's gradient (x must require a gradient; callers test that first so that they
// compute g only when it is needed). g is an array or a Tensor.
template <class T, class G>
void accumulate(const Tensor<T>& x, G&& g) {
  accumulate(*x.node(), std::forward<G>(g));
}
template <class T, class G>
void accumulate(const Edge<T>& x, G&& g) {
  accumulate(x.node(), std::forward<G>(g));
}

// A formula reads the output's value when it takes it: (grad, output). One that takes only the
// gradient lets the output's value go with its last handle.
template <class F, class T>
concept BackwardFormula = std::invocable<F&, const Tensor<T>&, const Tensor<T>&>;
template <class F, class T>
concept GradientOnlyFormula = std::invocable<F&, const Tensor<T>&>;

// run_formula's formula on a gradient lent to `output`, read in place. A handle the formula kept
// past the loan (a custom op storing its gradient) reads its own copy, also when the formula threw.
template <class T, class Apply>
void run_formula_on_lent(Node<T>& output, const xt::xarray<T>& lent, const Apply& apply) {
  const Tensor<T> g(Node<T>::lending(lent));
  const auto end_loan = [&] {
    if (g.node().use_count() > 1) g.node()->own_value();
  };
  try {
    apply(g);
  } catch (...) {
    end_loan();
    throw;
  }
  end_loan();
  if (output.retains_grad) output.accumulate_grad(xt::xarray<T>(lent));  // grad() must not alias the caller's array
}

// Runs a formula, given as apply(g), on the gradient of `output`. In a first-order walk the
// formula gets the gradient moved out of the node, so it stays valid for the whole call even if
// the formula clears the output's gradient; a retained gradient is put back after. Gradient hooks
// (Tensor::register_hook) see it first, and may replace it.
// A gradient lent to the output (backward's seed, Node::lend_grad) is read in place and passed
// like a retained one, as a handle the formula does not own: an input taking it unchanged gets a
// copy, so the caller's array is never moved or written. A hook's replacement is owned.
template <class T, class Apply>
void run_formula(Node<T>& output, const Apply& apply) {
  if (walk_creates_graph()) {
    const Tensor<T> g = take_graph_gradient(output);
    apply(g);
    if (output.retains_grad) retain_graph_gradient(output, g);
    return;
  }
  std::optional<xt::xarray<T>> grad;
  if (const xt::xarray<T>* lent = output.take_lent_grad()) {
    if (!output.hooks.empty()) grad = output.hooks_replacement(*lent);
    if (!grad) return run_formula_on_lent(output, *lent, apply);
  } else {
    grad = output.take_grad();
    if (!output.hooks.empty()) output.apply_hooks(*grad);
  }
  Tensor<T> g(std::move(*grad));
  if (!output.retains_grad) {
    // The formula gets the only handle: one taking g by value can pass its storage on (the last
    // input it reaches takes the array instead of a copy).
    apply(std::move(g));
    return;
  }
  apply(g);
  output.accumulate_grad(std::move(g.node()->value));
}

template <class T, class Backward>
Tensor<T> make_result(const char* op, std::source_location where, xt::xarray<T> value, Recording recording,
                      Backward&& backward) {
  // Inside a walk, a formula's ops compute gradients: anomaly mode checks those as gradients.
  if (is_anomaly_enabled() && !backward_walk_running()) [[unlikely]] {
    check_forward(op, where, value, recording.inputs_hold_inf);
  }
  Tensor<T> out(std::move(value));
  if (!recording.record) return out;
  const auto& node = out.node();
  node->requires_grad = true;
  node->is_leaf = false;
  node->op = op;
  node->producer = GradientTape::next_entry_id();
  Node<T>* raw = node.get();  // kept alive by the entry's `output`
  std::function<void()> run;
  if constexpr (GradientOnlyFormula<Backward, T>) {
    run = [raw, fn = std::forward<Backward>(backward)]() { run_formula(*raw, fn); };
  } else if constexpr (BackwardFormula<Backward, T>) {
    // The formula reads the output, so the entry holds its value.
    run = [raw, output = out, fn = std::forward<Backward>(backward)]() {
      run_formula(*raw, [&](Tensor<T> g) { fn(std::move(g), output); });
    };
  } else {
    run = [raw, op, output = out, fn = std::forward<Backward>(backward)]() {
      if (walk_creates_graph()) throw_not_differentiable_twice(op);
      std::optional<xt::xarray<T>> grad = raw->take_grad();
      if (!raw->hooks.empty()) raw->apply_hooks(*grad);
      fn(*grad, output.value());
      if (raw->retains_grad) raw->accumulate_grad(std::move(*grad));
    };
  }
  GradientTape::record(std::make_shared<const GradientTape::Entry>(
      GradientTape::Entry{node, op, std::move(run), where, std::move(recording.inputs)}));
  return out;
}

}  // namespace tapegrad::detail
