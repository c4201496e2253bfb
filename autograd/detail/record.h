#pragma once
// How an op records itself. Every op follows the same three steps in one function:
//   1. validate the inputs (throw ShapeError/ValueError naming the op, argument and shapes);
//   2. compute the forward value with a kernel;
//   3. return make_result(op, where, value, should_record(inputs...), backward), where `where` is
//      the op's trailing `CallSite where = std::source_location::current()` parameter (its
//      caller's file and line, for anomaly reports; autograd/call_site.h) and backward is
//      void(const xt::xarray<T>& grad_of_output, const xt::xarray<T>& output_value) and calls
//      accumulate(input, vjp) for each input that requires_grad(). A scalar the output holds by
//      design goes to should_record too (masked_fill's fill value): anomaly mode lets an infinity
//      through when an input already held one.
// The closure captures only what its backward needs (DESIGN.md: save the result for exp and
// softmax, mean/rstd for layer_norm, the mask for masked_fill and dropout).
#include <algorithm>
#include <cmath>
#include <concepts>
#include "autograd/source_location.h"
#include <utility>
#include <vector>

#include "autograd/anomaly.h"
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

template <class T, class Backward>
Tensor<T> make_result(const char* op, std::source_location where, xt::xarray<T> value, Recording recording,
                      Backward&& backward) {
  if (is_anomaly_enabled()) [[unlikely]] check_forward(op, where, value, recording.inputs_hold_inf);
  Tensor<T> out(std::move(value));
  if (!recording.record) return out;
  const auto& node = out.node();
  node->requires_grad = true;
  node->is_leaf = false;
  node->op = op;
  node->producer = GradientTape::next_entry_id();
  Node<T>* raw = node.get();  // kept alive by the entry's `output`
  // The closure gets the gradient moved out of the node, so it stays valid for the whole call
  // even if the closure clears the output's gradient; a retained gradient is put back after.
  // Gradient hooks (Tensor::register_hook) see it first, and may replace it.
  auto run = [raw, fn = std::forward<Backward>(backward)]() {
    std::optional<xt::xarray<T>> grad = raw->take_grad();
    if (!raw->hooks.empty()) raw->apply_hooks(*grad);
    fn(*grad, raw->value);
    if (raw->retains_grad) raw->accumulate_grad(std::move(*grad));
  };
  GradientTape::record(std::make_shared<const GradientTape::Entry>(
      GradientTape::Entry{node, op, std::move(run), where, std::move(recording.inputs)}));
  return out;
}

}  // namespace tapegrad::detail
