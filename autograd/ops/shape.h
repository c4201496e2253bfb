#pragma once
// Shape ops. All copy (no op aliases its input), so an in-place change to one tensor never shows
// through another. Negative axes count from the end, as in PyTorch.
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad {

// New shape with the same number of elements; at most one -1, inferred.
template <class T> Tensor<T> reshape(const Tensor<T>& a, const std::vector<Index>& shape);
// PyTorch's view; the same as reshape here (storage is always contiguous).
template <class T> Tensor<T> view(const Tensor<T>& a, const std::vector<Index>& shape) { return reshape(a, shape); }
// Output axis i is input axis dims[i]; dims is a permutation of 0..ndim-1.
template <class T> Tensor<T> permute(const Tensor<T>& a, const std::vector<Index>& dims);
template <class T> Tensor<T> transpose(const Tensor<T>& a, Index dim0, Index dim1);
// Inserts a size-1 axis at position axis (in the output's numbering: -1 appends).
template <class T> Tensor<T> unsqueeze(const Tensor<T>& a, Index axis);
// Removes every size-1 axis / the given axis when its size is 1 (otherwise unchanged, as PyTorch).
template <class T> Tensor<T> squeeze(const Tensor<T>& a);
template <class T> Tensor<T> squeeze(const Tensor<T>& a, Index axis);
// Broadcasts to shape (new axes on the left; size-1 axes stretch; -1 keeps an axis's size).
template <class T> Tensor<T> expand(const Tensor<T>& a, const std::vector<Index>& shape);
// Elements start, start+step, ... < end along axis; start and end may be negative (from the end)
// and are clamped to the axis as in Python slicing; step >= 1.
template <class T> Tensor<T> slice(const Tensor<T>& a, Index axis, Index start, Index end, Index step = 1);
// length elements from start along axis; start + length must fit.
template <class T> Tensor<T> narrow(const Tensor<T>& a, Index axis, Index start, Index length);
// Joins along axis; all other axes must agree.
template <class T> Tensor<T> concat(const std::vector<Tensor<T>>& tensors, Index axis = 0);
template <class T> Tensor<T> cat(const std::vector<Tensor<T>>& tensors, Index axis = 0) { return concat(tensors, axis); }
// chunks pieces of ceil(size / chunks) (the last may be smaller, fewer pieces if it runs out).
template <class T> std::vector<Tensor<T>> chunk(const Tensor<T>& a, std::size_t chunks, Index axis = 0);
// Pieces of split_size along axis (the last may be smaller) / pieces of the given sizes.
template <class T> std::vector<Tensor<T>> split(const Tensor<T>& a, std::size_t split_size, Index axis = 0);
template <class T> std::vector<Tensor<T>> split(const Tensor<T>& a, const std::vector<std::size_t>& sizes, Index axis = 0);
// Picks entries of a 1-D index along axis (repeats allowed; gradients of repeats add up).
template <class T> Tensor<T> index_select(const Tensor<T>& a, Index axis, const IndexArray& index);

}  // namespace tapegrad
