#pragma once
// Ops that read or write a tensor at integer positions along one axis, as PyTorch 1.13 defines
// them: gather, scatter_add and index_fill. Indices are an IndexArray; an index outside the axis
// is a ValueError naming the op, the index, its position and the shapes (never a stray read).
// A 0-d tensor counts as one axis of size 1 wherever ranks are compared, as in PyTorch.
//
// Gradients: gather and scatter_add are each other's backward (gather's gradient scatter-adds g
// into zeros of the input's shape; scatter_add's gradient for src gathers g back), so both
// differentiate to any order. index_fill's gradient is g with the filled entries set to 0.
#include "autograd/core/tensor.h"

namespace tapegrad {

// out[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (the index replaces the coordinate along dim).
// The output has index's shape. index has as many dims as x, and index.size(a) <= x.size(a) for
// every axis a other than dim (else ShapeError naming both shapes); entries lie in
// [0, x.size(dim)) (else ValueError). An empty index gives an empty output and is not checked.
// x [2,3], dim 1, index [[0,0],[1,0]]: [[x00,x00],[x11,x10]].
template <class T> Tensor<T> gather(const Tensor<T>& x, Index dim, const IndexArray& index,
    CallSite where = std::source_location::current());

// A copy of self with src added at the positions index names: out[index[i][j][k]][j][k] +=
// src[i][j][k] for dim 0, over index's shape (repeated indices add up, in index order, the same
// bits at any thread count). index, src and self have the same number of dims; index.size(a) <=
// src.size(a) for every axis and index.size(a) <= self.size(a) for every axis other than dim
// (else ShapeError naming the three shapes); entries lie in [0, self.size(dim)) (else ValueError).
// The entries of src outside index's shape are not read and get a zero gradient (PyTorch 1.13
// fails in backward there).
template <class T> Tensor<T> scatter_add(const Tensor<T>& self, Index dim, const IndexArray& index, const Tensor<T>& src,
    CallSite where = std::source_location::current());

// A copy of x with value at every position whose coordinate along dim is listed in index (0-d or
// 1-D, else ShapeError; entries in [-size, size), negative ones counting from the end, else
// ValueError; repeats allowed). x [2,3], dim 1, index {-1, 0}, 7: [[7,x01,7],[7,x11,7]].
template <class T> Tensor<T> index_fill(const Tensor<T>& x, Index dim, const IndexArray& index, Scalar<T> value,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
