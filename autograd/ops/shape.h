#pragma once
// Shape ops. All copy into new contiguous storage (no op aliases its input), so an in-place change
// to one tensor never shows through another. Negative axes count from the end, as in PyTorch; an
// axis out of range is a ValueError naming the op and the shape. Data movement is one strided-copy
// kernel (kernels/simd/strided_copy.h), parallel over rows.
//
// Gradients: reshape/view/squeeze/unsqueeze reshape g back; permute/transpose permute g by the
// inverse permutation; expand sums g over the stretched axes (kernels::sum_to); slice, narrow and
// every piece of chunk/split scatter g into zeros of the input's shape; concat hands each input
// its window of g; index_select adds row k of g into input row index[k] (repeats add up).
#include <initializer_list>
#include <utility>
#include <vector>

#include "autograd/core/tensor.h"

namespace tapegrad {

// New shape with the same number of elements; at most one -1, inferred ([2,3] -> {3,-1} gives
// [3,2]). Two -1s, another negative size, or sizes that multiply past 2^63: ValueError; an
// element count that does not fit (or a -1 next to a 0): ShapeError naming both shapes.
template <class T> Tensor<T> reshape(const Tensor<T>& a, const std::vector<Index>& shape,
    CallSite where = std::source_location::current());
// The same for a temporary (reshape(einsum(...), shape)): when nothing else can read its value any
// more, the value is moved into the result instead of copied.
template <class T> Tensor<T> reshape(Tensor<T>&& a, const std::vector<Index>& shape,
    CallSite where = std::source_location::current());
// PyTorch's view; the same as reshape here (storage is always contiguous).
template <class T> Tensor<T> view(const Tensor<T>& a, const std::vector<Index>& shape,
    CallSite where = std::source_location::current()) {
  return reshape(a, shape, where);
}
template <class T> Tensor<T> view(Tensor<T>&& a, const std::vector<Index>& shape,
    CallSite where = std::source_location::current()) {
  return reshape(std::move(a), shape, where);
}
// Output axis i is input axis dims[i]; dims is a permutation of 0..ndim-1 (negative entries
// allowed): [2,3,4] with {2,0,1} gives [4,2,3]. Wrong length: ShapeError; repeats: ValueError.
template <class T> Tensor<T> permute(const Tensor<T>& a, const std::vector<Index>& dims,
    CallSite where = std::source_location::current());
// Swaps two axes; a 0-d tensor takes dims 0 and -1 and is returned as is (PyTorch).
template <class T> Tensor<T> transpose(const Tensor<T>& a, Index dim0, Index dim1,
    CallSite where = std::source_location::current());
// Inserts a size-1 axis at position axis (in the output's numbering: -1 appends), axis in
// [-ndim-1, ndim]: [2,3] with 1 gives [2,1,3].
template <class T> Tensor<T> unsqueeze(const Tensor<T>& a, Index axis,
    CallSite where = std::source_location::current());
// Removes every size-1 axis / the given axis when its size is 1 (otherwise unchanged, as PyTorch).
// A 0-d tensor takes axis 0 or -1 and is returned as is (PyTorch).
template <class T> Tensor<T> squeeze(const Tensor<T>& a, CallSite where = std::source_location::current());
template <class T> Tensor<T> squeeze(const Tensor<T>& a, Index axis,
    CallSite where = std::source_location::current());
// Broadcasts to shape (new axes on the left; size-1 axes stretch; -1 keeps an axis's size):
// [3,1] to {2,3,4} gives [2,3,4]. Fewer dims than the input, or a non-1 axis asked to change:
// ShapeError; -1 on a new leading axis or another negative size: ValueError.
template <class T> Tensor<T> expand(const Tensor<T>& a, const std::vector<Index>& shape,
    CallSite where = std::source_location::current());
// Elements start, start+step, ... < end along axis; start and end may be negative (from the end)
// and are clamped to the axis as in Python slicing (an empty range gives size 0); step >= 1, else
// ValueError. [10] with (2, 8, 3) gives elements 2, 5.
template <class T> Tensor<T> slice(const Tensor<T>& a, Index axis, Index start, Index end, Index step = 1,
    CallSite where = std::source_location::current());
// length elements from start along axis; start may be negative (from the end); start + length
// must fit in the axis, else ValueError.
template <class T> Tensor<T> narrow(const Tensor<T>& a, Index axis, Index start, Index length,
    CallSite where = std::source_location::current());
// Joins along axis; all other axes must agree, as must the number of dims (ShapeError naming the
// offending tensor and both shapes). At least one tensor (ValueError); 0-d tensors cannot join.
template <class T> Tensor<T> concat(const std::vector<Tensor<T>>& tensors, Index axis = 0,
    CallSite where = std::source_location::current());
template <class T> Tensor<T> cat(const std::vector<Tensor<T>>& tensors, Index axis = 0,
    CallSite where = std::source_location::current()) {
  return concat(tensors, axis, where);
}
// So that concat({a, b}, 1) deduces T from a braced list (a std::vector parameter cannot).
template <class T> Tensor<T> concat(std::initializer_list<Tensor<T>> tensors, Index axis = 0,
    CallSite where = std::source_location::current()) {
  return concat(std::vector<Tensor<T>>(tensors), axis, where);
}
template <class T> Tensor<T> cat(std::initializer_list<Tensor<T>> tensors, Index axis = 0,
    CallSite where = std::source_location::current()) {
  return concat(std::vector<Tensor<T>>(tensors), axis, where);
}
// chunks pieces of ceil(size / chunks) (the last may be smaller, fewer pieces if it runs out:
// 6 in 4 chunks gives 2,2,2; more chunks than elements gives pieces of 1), as PyTorch; an empty
// axis gives `chunks` empty pieces. chunks >= 1.
template <class T> std::vector<Tensor<T>> chunk(const Tensor<T>& a, std::size_t chunks, Index axis = 0,
    CallSite where = std::source_location::current());
// Pieces of split_size along axis (the last may be smaller; an empty axis gives one empty piece;
// split_size 0 is a ValueError unless the axis is empty) / pieces of the given sizes, which must
// sum to the axis size (ValueError, also when they only do so by wrapping around 2^64). Each
// piece is a separate tensor with its own backward.
template <class T> std::vector<Tensor<T>> split(const Tensor<T>& a, std::size_t split_size, Index axis = 0,
    CallSite where = std::source_location::current());
template <class T> std::vector<Tensor<T>> split(const Tensor<T>& a, const std::vector<std::size_t>& sizes, Index axis = 0,
    CallSite where = std::source_location::current());
// Picks entries of a 1-D index along axis (repeats allowed; gradients of repeats add up): output
// shape is a's with axis resized to index.size(). An index that is not 1-D: ShapeError; an entry
// outside [0, size): ValueError naming the entry, its position and the shape. A 0-d tensor takes
// axis 0 or -1 and the index [0] only, and is returned as is (PyTorch).
template <class T> Tensor<T> index_select(const Tensor<T>& a, Index axis, const IndexArray& index,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
