#pragma once
// How an op records itself. Every op follows the same three steps in one function:
//   1. validate the inputs (throw ShapeError/ValueError naming the op, argument and shapes);
//   2. compute the forward value with a kernel;
//   3. return make_result(op, where, value, should_record(inputs...), backward), where `where` is
//      the op's trailing `CallSite where = std::source_location::current()` parameter (its
//      caller's file and line, for anomaly reports; autograd/base/call_site.h). A scalar the output
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
// The formula keeps only what its backward reads (the result for exp and softmax,
// mean/rstd for layer_norm, the mask for masked_fill and dropout): an input whose value it does
// not read is captured as an edge (detail::edge), and the output's value is kept only by a
// formula that takes it. Every other value is freed when the caller's last handle to it goes.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <optional>
#include "autograd/base/source_location.h"
#include <utility>
#include <vector>

#include "autograd/core/anomaly.h"
#include "autograd/core/routing.h"
#include "autograd/core/tape.h"
#include "autograd/core/tensor.h"

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

// Adds g into x's gradient (x must require a gradient; callers test that first so that they
// compute g only when it is needed): g is an array, or a Tensor, recorded under create_graph.
// Where it goes is routing's decision (routing.h).
template <class T, class G>
void accumulate(const Tensor<T>& x, G&& g) {
  route(*x.node(), std::forward<G>(g));
}
template <class T, class G>
void accumulate(const Edge<T>& x, G&& g) {
  route(x.node(), std::forward<G>(g));
}

// A formula reads the output's value when it takes it: (grad, output). One that takes only the
// gradient lets the output's value go with its last handle.
template <class F, class T>
concept BackwardFormula = std::invocable<F&, const Tensor<T>&, const Tensor<T>&>;
template <class F, class T>
concept GradientOnlyFormula = std::invocable<F&, const Tensor<T>&>;

template <class T, class Backward>
Tensor<T> make_result(const char* op, std::source_location where, xt::xarray<T> value, Recording recording,
                      Backward&& backward) {
  // Inside a walk, a formula's ops compute gradients: anomaly mode checks those as gradients.
  if (is_anomaly_enabled() && !walk_running()) [[unlikely]] {
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
      run_array_closure(*raw, op, output.value(), fn);
    };
  }
  GradientTape::record(std::make_shared<const GradientTape::Entry>(
      GradientTape::Entry{node, op, std::move(run), where, std::move(recording.inputs)}));
  return out;
}

}  // namespace tapegrad::detail
