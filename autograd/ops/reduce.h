#pragma once
// Reductions over all elements or over a list of axes.
//
// Axes: negative axes count from the end; an axis out of range, or named twice (1 and -1 of a
// matrix), is a ValueError naming the op and the shape. An EMPTY axis list reduces every axis, as
// PyTorch 1.13's sum(x, dim=[]) (with keepdims, [2,3] gives [1,1]). A 0-d tensor takes axis 0 or
// -1, as PyTorch: the result is the tensor itself (shape [], with or without keepdims).
// Shapes: a [2,3,4] input reduced over {0,2} gives [3], or [1,3,1] with keepdims. The overloads
// without axes give a 0-d tensor (shape []).
//
//   sum:  y[k] = sum_{i in group k} x[i]            dL/dx[i] = g[k]
//   mean: y[k] = sum / n_k (NaN for an empty group)  dL/dx[i] = g[k] / n_k
//   max:  y[k] = max_{i in group k} x[i]            dL/dx[i] = g[k] / t_k if x[i] == y[k], else 0
//         where t_k counts the tied maxima (PyTorch's amax rule). NaN propagates: a group holding
//         NaN has maximum NaN (and passes no gradient; PyTorch 1.13's max(x) splits g between
//         the NaNs, its amax gives NaN everywhere). The maximum of an empty group is a
//         ValueError.
//   min:  the same with the minimum (over all elements only: torch.min(x)).
// Each group is summed in index order by one thread, in double (float sums over long axes keep
// their precision), so results are the same bit for bit at any thread count.
#include <algorithm>
#include <concepts>
#include <vector>

#include "autograd/core/tensor.h"

namespace tapegrad {

using Axes = std::vector<Index>;

template <class T> Tensor<T> sum(const Tensor<T>& a,
    CallSite where = std::source_location::current());  // shape []
template <class T> Tensor<T> sum(const Tensor<T>& a, const Axes& axes, bool keepdims = false,
    CallSite where = std::source_location::current());
template <class T> Tensor<T> mean(const Tensor<T>& a, CallSite where = std::source_location::current());
template <class T> Tensor<T> mean(const Tensor<T>& a, const Axes& axes, bool keepdims = false,
    CallSite where = std::source_location::current());
// Maximum; the gradient is split evenly between tied maxima (PyTorch's amax rule).
template <class T> Tensor<T> max(const Tensor<T>& a, CallSite where = std::source_location::current());
template <class T> Tensor<T> max(const Tensor<T>& a, const Axes& axes, bool keepdims = false,
    CallSite where = std::source_location::current());
// Minimum of all elements (shape []), torch.min(x); the gradient is split evenly between tied minima.
template <class T> Tensor<T> min(const Tensor<T>& a, CallSite where = std::source_location::current());

// The maximum or minimum along one axis and where it is, as torch.max(x, dim) / torch.min(x, dim):
//   values[k] = a[k with axis dim at indices[k]], indices[k] = the first position (lowest index)
//   holding the group's maximum (minimum); a NaN is both, so the first NaN is picked.
// Shapes: a [2,3,4] input along dim 1 gives values and indices [2,4] ([2,1,4] with keepdim). A
// 0-d tensor takes dim 0 or -1 and gives itself and index 0. dim out of range, or an axis of size
// 0: ValueError. dL/da is g at the selected position of each group and 0 elsewhere (also at
// ties: unlike max(a, axes), the gradient is not split). dim is a template parameter so that a
// braced list, max(a, {1}), still picks the axes overload above.
template <class T> struct ValuesIndices {
  Tensor<T> values;
  IndexArray indices;
};
namespace detail {
// max (largest) or min along dim.
template <class T> ValuesIndices<T> extreme_along(bool largest, const Tensor<T>& a, Index dim, bool keepdim,
                                                  CallSite where);
}  // namespace detail
template <class T, std::integral D> ValuesIndices<T> max(const Tensor<T>& a, D dim, bool keepdim = false,
    CallSite where = std::source_location::current()) {
  return detail::extreme_along(true, a, static_cast<Index>(dim), keepdim, where);
}
template <class T, std::integral D> ValuesIndices<T> min(const Tensor<T>& a, D dim, bool keepdim = false,
    CallSite where = std::source_location::current()) {
  return detail::extreme_along(false, a, static_cast<Index>(dim), keepdim, where);
}

// Sums a over the axes that broadcasting from `shape` to a's shape adds or stretches, giving a
// tensor of `shape` (PyTorch's sum_to_size; the backward of every broadcasting op). ShapeError
// unless `shape` broadcasts to a's shape. Its backward is expand, and expand's is sum_to.
template <class T> Tensor<T> sum_to(const Tensor<T>& a, const Shape& shape,
    CallSite where = std::source_location::current());

namespace detail {
// The reduced-axis mask of an axis list for a tensor of `shape`, as the reductions read it (for ops
// that reduce elsewhere, so they check axes alike): an axis out of range or named twice (1 and -1
// of a matrix) is a ValueError naming op; an empty list reduces every axis (PyTorch 1.13).
std::vector<bool> axes_mask(const char* op, const Shape& shape, const Axes& axes);

// For backward formulas: sum_to when g has more or larger axes than `shape`, otherwise g itself
// (taken and returned by value, so a temporary passes through without a copy).
template <class T> Tensor<T> unbroadcast(Tensor<T> g, const Shape& shape) {
  const auto& s = g.value().shape();
  if (std::equal(s.begin(), s.end(), shape.begin(), shape.end())) return g;
  return sum_to(g, shape);
}
}  // namespace detail

}  // namespace tapegrad
