#pragma once
// argmax / argmin as PyTorch 1.13 defines them: the position of the largest (smallest) element,
// the first one at ties, a NaN counting as both largest and smallest (the first NaN wins). They
// return an IndexArray and are not differentiable (nothing is recorded).
#include <optional>

#include "autograd/core/tensor.h"

namespace tapegrad {

// Without dim: the flat (row-major) index of the element over the whole tensor, 0-d, or of shape
// [1, ..., 1] (x's rank) with keepdim; an empty x is a ValueError (there is no position).
// With dim: along that axis, as max(x, dim, keepdim).indices; [2,3] along 1 gives [2] ([2,1]
// with keepdim); a 0-d x takes dim 0 or -1 and gives 0. dim out of range, or an axis of size 0
// along dim: ValueError. [[1,3,3],[2,nan,nan]]: argmax 4; along 1: [1,1]; argmin along 1: [0,1].
template <class T> IndexArray argmax(const Tensor<T>& x, std::optional<Index> dim = std::nullopt, bool keepdim = false);
template <class T> IndexArray argmin(const Tensor<T>& x, std::optional<Index> dim = std::nullopt, bool keepdim = false);

}  // namespace tapegrad
