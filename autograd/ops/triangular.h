#pragma once
// tril and triu: the lower or upper triangle of the last two axes.
#include "autograd/core/tensor.h"

namespace tapegrad {

// For a [..., rows, cols] tensor (at least 2 dims), torch.tril / torch.triu: element (i, j) of
// each matrix is kept where j - i <= diagonal (tril) or j - i >= diagonal (triu) and 0 elsewhere.
// diagonal 0 is the main diagonal, > 0 above it, < 0 below it (any integer; far out of range
// keeps all or nothing). dL/da = the same triangle of g. Fewer than 2 dims: ShapeError naming the
// shape.
template <class T> Tensor<T> tril(const Tensor<T>& a, Index diagonal = 0, CallSite where = std::source_location::current());
template <class T> Tensor<T> triu(const Tensor<T>& a, Index diagonal = 0, CallSite where = std::source_location::current());

}  // namespace tapegrad
