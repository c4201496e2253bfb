#pragma once
// Validation helpers shared by ops; each throws with the op's name and the shapes in the message.
#include <string_view>
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad::detail {

// Maps a possibly negative axis into [0, ndim); ValueError naming op, the axis and the shape.
std::size_t normalize_axis(Index axis, std::size_t ndim, std::string_view op, const Shape& shape);

// PyTorch lets an op that takes an axis name axis 0 or -1 of a 0-d tensor, as if it had one axis
// of size 1 (sum(x, {0}) of a 0-d x is x). True when `shape` is 0-d and axis is 0 or -1: the op
// then acts on the one element. False when the tensor has axes (use normalize_axis). Any other
// axis of a 0-d tensor: ValueError naming op, the axis and the range [-1, 0].
bool is_scalar_axis(Index axis, const Shape& shape, std::string_view op);

// "0.5", "-1", "1e-08", "nan", "inf": how numbers (hyper-parameters, bounds) are printed in messages.
std::string format_number(double value);

// detail::checked_numel and detail::allocatable, the shape-size checks, are in autograd/errors.h
// (kernels use them too).

// A shape as the signed sizes reshape, view and expand take.
inline std::vector<Index> as_dims(const Shape& shape) { return std::vector<Index>(shape.begin(), shape.end()); }

// ValueError when t is undefined, naming op and argument.
template <class T>
void require_defined(const Tensor<T>& t, std::string_view op, std::string_view argument) {
  if (!t.defined()) throw ValueError(std::string(op) + ": argument '" + std::string(argument) + "' is an undefined tensor");
}

}  // namespace tapegrad::detail
