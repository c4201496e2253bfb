#pragma once
// Ops whose every output element is one of their inputs' elements: clamp, where and topk. Each
// output element's gradient goes to the input it was taken from (summed back over broadcast axes),
// and nowhere when it was taken from none (a NaN in clamp); the backward is masked_fill of g with
// 0 (topk's: scatter_add of g into zeros), so it differentiates again.
#include <optional>

#include "autograd/ops/masking.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tensor.h"

namespace tapegrad {

// clamp(a, min, max) = min(max(a, min), max) elementwise, PyTorch's clamp: either bound may be
// std::nullopt (not both: ValueError), and min > max gives max everywhere. A NaN element of a stays
// NaN. Gradient (PyTorch's rule): 1 where min <= a <= max, boundaries included; 0 elsewhere and at
// NaN. A NaN bound is a ValueError (PyTorch 1.13 ignores a NaN min given alone but returns NaN for
// a NaN max next to a min: no consistent rule to match).
template <class T> Tensor<T> clamp(const Tensor<T>& a, std::optional<Scalar<T>> min, std::optional<Scalar<T>> max,
    CallSite where = std::source_location::current());

// The same with tensor bounds; an undefined tensor is an absent bound (not both: ValueError). a,
// min and max broadcast together (ShapeError naming the three shapes) and the output has the
// broadcast shape. Where any of the three is NaN the output is NaN and no gradient flows. Where
// min > max the output is max. Gradients, as PyTorch's clamp_backward_min_max:
//   d/da = 1 where min <= a <= max;  d/dmin = 1 where a < min <= max;  d/dmax = 1 where a > max or
//   min > max; each summed back to its input's shape.
template <class T> Tensor<T> clamp(const Tensor<T>& a, const Tensor<T>& min, const Tensor<T>& max,
    CallSite where = std::source_location::current());

// where(condition, a, b)[i] = condition[i] ? a[i] : b[i], torch.where: condition, a and b
// broadcast together (ShapeError naming the three shapes), e.g. a [4,1] mask over [4,3] and a
// 0-d b. d/da = g where condition, 0 elsewhere; d/db the rest; each summed back to its shape.
// Call it qualified, tapegrad::where(...): unqualified, argument-dependent lookup through the Mask
// (an xt::xarray) also finds xt::where, whose return type fails to compile for tensors.
template <class T> Tensor<T> where(const Mask& condition, const Tensor<T>& a, const Tensor<T>& b,
    CallSite site = std::source_location::current());

// The k largest (smallest when !largest) elements along dim and where they are, torch.topk:
//   values[..., j, ...] = a[..., indices[..., j, ...], ...] for j in [0, k) along dim.
// Shapes: a [2,5,3] along dim 1 with k 2 gives values and indices [2,2,3] (dim keeps its place,
// with size k). k = 0 gives empty outputs; k = a.size(dim) selects every element. A 0-d tensor
// takes dim 0 or -1 and k 0 or 1 and gives itself and index 0 (PyTorch 1.13 also for k = 0).
// Order: with sorted, best first; without, the selected elements in their order along dim (PyTorch
// leaves it unspecified). NaN ranks above every number, as in PyTorch: NaNs come first when
// largest and are picked last otherwise. Ties: of equal values the lower index ranks first, so
// the choice is deterministic (PyTorch leaves tie order unspecified: its CPU kernel picks indices
// 1 and 2 of [2,2,2,1]). dL/da is g at the selected positions and 0 elsewhere: scatter_add of g
// into zeros, whose own gradient is gather, so it differentiates again.
// Errors (ValueError naming topk, the argument and the shape): k < 0 or k > a.size(dim); dim out
// of range. Each lane along dim is selected by one thread (std::partial_sort, or nth_element when
// !sorted), lanes in parallel.
template <class T> ValuesIndices<T> topk(const Tensor<T>& a, Index k, Index dim = -1, bool largest = true,
    bool sorted = true, CallSite where = std::source_location::current());

}  // namespace tapegrad
