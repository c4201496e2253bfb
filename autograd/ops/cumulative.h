#pragma once
// cumsum and cumprod: running sums and products along one axis.
#include "autograd/core/tensor.h"

namespace tapegrad {

// y[..., k, ...] = sum_{j <= k} a[..., j, ...] along axis dim (negative from the end), as
// torch.cumsum(a, dim); the output has a's shape. Each lane is summed in index order in double
// (PyTorch's CPU accumulator for float too), by one thread: the same bits at any thread count.
// A 0-d tensor takes dim 0 or -1 and is returned as is. dL/da = the reversed cumsum of g (sum of
// g over positions k and after), itself a recorded running sum, so it differentiates again.
// ValueError for a dim out of range, naming the shape.
template <class T> Tensor<T> cumsum(const Tensor<T>& a, Index dim, CallSite where = std::source_location::current());

// y[..., k, ...] = prod_{j <= k} a[..., j, ...] along axis dim (negative from the end), as
// torch.cumprod(a, dim); shapes, dims, 0-d tensors, accumulation and errors as cumsum's.
// dL/da[k] = sum_{i >= k} g[i] prod_{j <= i, j != k} a[j], computed with ops (so it
// differentiates again): reversed_cumsum(g * y) / a when no element of a is zero, and the
// products that omit a[k] when one is (PyTorch's formula for such inputs), exact at zeros.
template <class T> Tensor<T> cumprod(const Tensor<T>& a, Index dim, CallSite where = std::source_location::current());

}  // namespace tapegrad
