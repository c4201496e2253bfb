#pragma once
// How an op records itself. Every op follows the same three steps in one function:
//   1. validate the inputs (throw ShapeError/ValueError naming the op, argument and shapes);
//   2. compute the forward value with a kernel;
//   3. return make_result(op, where, value, should_record(inputs...), backward), where `where` is
//      the op's trailing `CallSite where = std::source_location::current()` parameter (its
//      caller's file and line, for anomaly reports; autograd/call_site.h). A scalar the output
//      holds by design goes to should_record too (masked_fill's fill value): anomaly mode lets an
//      infinity through when an input already held one.
// backward is a backward formula: void(const Tensor<T>& grad_of_output, const Tensor<T>& output)
// that calls accumulate(input, vjp) for each input that requires_grad(), with vjp computed by
// tapegrad's ops. The one formula serves both walks: a first-order walk runs it with recording
// paused (its ops are plain kernels), and a create_graph walk runs it recorded, so the gradient
// can be differentiated again and is the same, bit for bit, in both. A fused op's backward is an
// op of its own (softmax_backward, ...) with a formula of its own.
// A closure on plain arrays, void(const xt::xarray<T>& grad, const xt::xarray<T>& output) calling
// accumulate(input, array), is still accepted (custom ops written before create_graph): it runs
// in first-order walks, and a create_graph walk reaching it throws TapeError naming the op.
// The formula captures only what its backward needs (DESIGN.md: save the result for exp and
// softmax, mean/rstd for layer_norm, the mask for masked_fill and dropout).
#include <algorithm>
#include <cmath>
#include <concepts>
#include "autograd/source_location.h"
#include <utility>
#include <vector>

#include "autograd/anomaly.h"
#include "autograd/detail/graph_gradient.h"
#include "autograd/detail/walk.h"
#include "autograd/tape.h"
#include "autograd/tensor.h"

namespace tapegrad::detail {

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

// Adds g into x's gradient (x must require a gradient; callers test that first so that they
// compute g only when it is needed).
template <class T>
void accumulate(const Tensor<T>& x, xt::xarray<T>&& g) {
  if (is_anomaly_enabled()) [[unlikely]] check_gradient(x, g);
  x.node()->accumulate_grad(std::move(g));
}

// A backward formula's vjp: recorded into the walk under create_graph, otherwise its value is
// added (moved out when nothing else holds it).
template <class T>
void accumulate(const Tensor<T>& x, Tensor<T> g) {
  if (walk_creates_graph()) return accumulate_in_graph(x, std::move(g));
  if (g.node().use_count() == 1) accumulate(x, std::move(g.node()->value));
  else accumulate(x, xt::xarray<T>(g.value()));
}

template <class F, class T>
concept BackwardFormula = std::invocable<F&, const Tensor<T>&, const Tensor<T>&>;

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
  if constexpr (BackwardFormula<Backward, T>) {
    run = [raw, fn = std::forward<Backward>(backward)]() {
      const Tensor<T> output(std::static_pointer_cast<Node<T>>(raw->shared_from_this()));
      if (walk_creates_graph()) {
        const Tensor<T> g = take_graph_gradient(output);
        fn(g, output);
        if (raw->retains_grad) retain_graph_gradient(output, g);
        return;
      }
      // The formula gets the gradient moved out of the node, so it stays valid for the whole
      // call even if the formula clears the output's gradient; a retained gradient is put back
      // after. Gradient hooks (Tensor::register_hook) see it first, and may replace it.
      std::optional<xt::xarray<T>> grad = raw->take_grad();
      if (!raw->hooks.empty()) raw->apply_hooks(*grad);
      const Tensor<T> g(std::move(*grad));
      fn(g, output);
      if (raw->retains_grad) raw->accumulate_grad(std::move(g.node()->value));
    };
  } else {
    run = [raw, op, fn = std::forward<Backward>(backward)]() {
      if (walk_creates_graph()) throw_not_differentiable_twice(op);
      std::optional<xt::xarray<T>> grad = raw->take_grad();
      if (!raw->hooks.empty()) raw->apply_hooks(*grad);
      fn(*grad, raw->value);
      if (raw->retains_grad) raw->accumulate_grad(std::move(*grad));
    };
  }
  GradientTape::record(std::make_shared<const GradientTape::Entry>(
      GradientTape::Entry{node, op, std::move(run), where, std::move(recording.inputs)}));
  return out;
}

}  // namespace tapegrad::detail
