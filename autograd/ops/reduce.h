#pragma once
// Reductions over all elements or over a list of axes.
//
// Axes: negative axes count from the end; an axis out of range, or named twice (1 and -1 of a
// matrix), is a ValueError naming the op and the shape. An EMPTY axis list reduces nothing: the
// result is a copy of the input (its gradient passes straight through). PyTorch's sum(dim=[]) is
// ambiguous (older versions reduce everything); use the overloads without axes for that.
// Shapes: a [2,3,4] input reduced over {0,2} gives [3], or [1,3,1] with keepdims. The overloads
// without axes give a 0-d tensor (shape []).
//
//   sum:  y[k] = sum_{i in group k} x[i]            dL/dx[i] = g[k]
//   mean: y[k] = sum / n_k (NaN for an empty group)  dL/dx[i] = g[k] / n_k
//   max:  y[k] = max_{i in group k} x[i]            dL/dx[i] = g[k] / t_k if x[i] == y[k], else 0
//         where t_k counts the tied maxima (PyTorch's amax rule). NaN propagates: a group holding
//         NaN has maximum NaN (and passes no gradient). The maximum of an empty group is a
//         ValueError.
// Each group is summed in index order by one thread, in double (float sums over long axes keep
// their precision), so results are the same bit for bit at any thread count.
#include <algorithm>
#include <vector>

#include "autograd/tensor.h"

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

// Sums a over the axes that broadcasting from `shape` to a's shape adds or stretches, giving a
// tensor of `shape` (PyTorch's sum_to_size; the backward of every broadcasting op). ShapeError
// unless `shape` broadcasts to a's shape. Its backward is expand, and expand's is sum_to.
template <class T> Tensor<T> sum_to(const Tensor<T>& a, const Shape& shape,
    CallSite where = std::source_location::current());

namespace detail {
// The reduced-axis mask of an axis list for a tensor of `shape`, as the reductions read it (for ops
// that reduce elsewhere, so they check axes alike): an axis out of range or named twice (1 and -1
// of a matrix) is a ValueError naming op; an empty list reduces nothing.
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
