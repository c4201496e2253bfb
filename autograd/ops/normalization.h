#pragma once
// layer_norm over the last k axes, as torch.nn.functional.layer_norm:
//   y = (x - mean) / sqrt(var + eps) * weight + bias, mean and (biased) var over the last
//   normalized_shape.size() axes, whose sizes must equal normalized_shape.
// weight and bias are optional (undefined tensors) and, when given, have shape normalized_shape.
// x is [..., *normalized_shape] and y has its shape. The forward saves mean and 1/std per row for
// the backward, whose fused kernel gives dx, dweight and dbias; each of these is an op of its own,
// differentiable again (create_graph) through the statistics re-expressed with tensor ops.
// ShapeError when normalized_shape is empty or not x's trailing dims, or when weight or bias does
// not have normalized_shape; ValueError unless eps is finite and > 0 (check_layer_norm_eps).

#include <string_view>

#include "autograd/core/tensor.h"

namespace tapegrad {

template <class T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight = {},
                     const Tensor<T>& bias = {}, double eps = 1e-5,
                     CallSite where = std::source_location::current());

// layer_norm's rule for eps, in one place for the op and nn::LayerNorm: finite and > 0 (eps <= 0
// or NaN makes 1/sqrt(var + eps) infinite or NaN on constant rows; eps = inf zeroes every output
// but the bias), else ValueError "<who>: eps must be finite and > 0, got <eps>".
void check_layer_norm_eps(double eps, std::string_view who);

}  // namespace tapegrad
