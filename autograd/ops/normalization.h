#pragma once
// layer_norm over the last k axes, as torch.nn.functional.layer_norm:
//   y = (x - mean) / sqrt(var + eps) * weight + bias, mean and (biased) var over the last
//   normalized_shape.size() axes, whose sizes must equal normalized_shape.
// weight and bias are optional (undefined tensors) and, when given, have shape normalized_shape.
// x is [..., *normalized_shape] and y has its shape. The forward saves mean and 1/std per row for
// the backward, whose fused kernel gives dx, dweight and dbias; each of these is an op of its own,
// differentiable again (create_graph) through the statistics re-expressed with tensor ops.
// ShapeError when normalized_shape is empty or not x's trailing dims, or when weight or bias does
// not have normalized_shape; ValueError unless eps > 0.

#include "autograd/tensor.h"

namespace tapegrad {

template <class T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight = {},
                     const Tensor<T>& bias = {}, double eps = 1e-5,
                     CallSite where = std::source_location::current());

}  // namespace tapegrad
