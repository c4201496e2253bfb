#pragma once
// How an op records itself. Every op follows the same three steps in one function:
//   1. validate the inputs (throw ShapeError/ValueError naming the op, argument and shapes);
//   2. compute the forward value with a kernel;
//   3. return make_result(op, value, should_record(inputs...), backward), where backward is
//      void(const xt::xarray<T>& grad_of_output, const xt::xarray<T>& output_value) and calls
//      accumulate(input, vjp) for each input that requires_grad().
// The closure captures only what its backward needs (DESIGN.md: save the result for exp and
// softmax, mean/rstd for layer_norm, the mask for masked_fill and dropout).
#include <utility>
#include <vector>

#include "autograd/tape.h"
#include "autograd/tensor.h"

namespace tapegrad::detail {

template <class... Tensors>
bool should_record(const Tensors&... inputs) {
  return is_recording() && (... || (inputs.defined() && inputs.requires_grad()));
}

template <class T>
bool should_record_any(const std::vector<Tensor<T>>& inputs) {
  if (!is_recording()) return false;
  for (const auto& x : inputs)
    if (x.defined() && x.requires_grad()) return true;
  return false;
}

// Adds g into x's gradient (x must require a gradient; callers test that first so that they
// compute g only when it is needed).
template <class T>
void accumulate(const Tensor<T>& x, xt::xarray<T>&& g) {
  x.node()->accumulate_grad(std::move(g));
}

template <class T, class Backward>
Tensor<T> make_result(const char* op, xt::xarray<T> value, bool record, Backward&& backward) {
  Tensor<T> out(std::move(value));
  if (!record) return out;
  const auto& node = out.node();
  node->requires_grad = true;
  node->is_leaf = false;
  node->op = op;
  Node<T>* raw = node.get();  // kept alive by the entry's `output`
  GradientTape::record(std::make_shared<const GradientTape::Entry>(GradientTape::Entry{
      node, op, [raw, fn = std::forward<Backward>(backward)]() { fn(*raw->grad, raw->value); }}));
  return out;
}

}  // namespace tapegrad::detail
