#pragma once
// cumsum: running sums along one axis.
#include "autograd/core/tensor.h"

namespace tapegrad {

// y[..., k, ...] = sum_{j <= k} a[..., j, ...] along axis dim (negative from the end), as
// torch.cumsum(a, dim); the output has a's shape. Each lane is summed in index order in double
// (PyTorch's CPU accumulator for float too), by one thread: the same bits at any thread count.
// A 0-d tensor takes dim 0 or -1 and is returned as is. dL/da = the reversed cumsum of g (sum of
// g over positions k and after), itself a recorded running sum, so it differentiates again.
// ValueError for a dim out of range, naming the shape.
template <class T> Tensor<T> cumsum(const Tensor<T>& a, Index dim, CallSite where = std::source_location::current());

}  // namespace tapegrad
