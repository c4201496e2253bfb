#include "autograd/ops/reduce.h"

#include <cmath>
#include <string>

#include "autograd/ops/detail/dims.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/shape.h"
#include "autograd/kernels/simd/strided_copy.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// How a reduction reads its input: kept axes first, reduced axes last (each group in its original
// order), so the input read that way is `rows` contiguous rows of `cols` elements, one row per
// output element, and the rows come out in the output's row-major order.
struct ReducePlan {
  Shape out_shape;                 // the result's shape (with or without keepdims)
  Shape kept_shape;                // the input's shape with reduced axes set to 1
  std::vector<std::size_t> order;  // kept axes, then reduced axes
  bool in_order = true;            // order is the identity: the input is already [rows, cols]
  std::size_t rows = 1, cols = 1;
};

ReducePlan plan_reduction(const Shape& shape, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan p;
  p.kept_shape = shape;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      p.cols *= shape[d];
      p.kept_shape[d] = 1;
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.rows *= shape[d];
      p.out_shape.push_back(shape[d]);
      p.order.push_back(d);
    }
  }
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) p.order.push_back(d);
  for (std::size_t d = 0; d < shape.size(); ++d) p.in_order = p.in_order && p.order[d] == d;
  return p;
}

std::vector<bool> all_axes(const Shape& shape) { return std::vector<bool>(shape.size(), true); }

}  // namespace

// An empty list reduces every axis (PyTorch 1.13's sum(x, dim=[])). A 0-d tensor takes axis 0 or
// -1 (once), as PyTorch: there is nothing to reduce, so its mask is empty.
std::vector<bool> detail::axes_mask(const char* op, const Shape& shape, const Axes& axes) {
  if (axes.empty()) return all_axes(shape);
  // A 0-d tensor's one axis-like position is checked for repeats as an axis of its own.
  std::vector<bool> reduced(std::max<std::size_t>(shape.size(), 1), false);
  for (const Index axis : axes) {
    const std::size_t d = is_scalar_axis(axis, shape, op) ? 0 : normalize_axis(axis, shape.size(), op, shape);
    if (reduced[d]) {
      throw ValueError(std::string(op) + ": axis " + std::to_string(d) + " is named twice in the axes (last as " +
                       std::to_string(axis) + ") for a tensor of shape " + format_shape(shape));
    }
    reduced[d] = true;
  }
  reduced.resize(shape.size());
  return reduced;
}

namespace {

// The input as `rows` contiguous rows of `cols`: the input's own storage when the reduced axes
// already trail, otherwise a permuted copy held in `storage`.
template <class T>
const T* as_rows(const xt::xarray<T>& x, const ReducePlan& p, xt::xarray<T>& storage) {
  if (p.in_order) return x.data();
  storage = kernels::permute_copy(x, p.order);
  return storage.data();
}

// Sum (divisor 1) or mean (divisor cols). Rows are summed in index order in double, so float sums
// over long axes keep their precision; mean over zero elements is 0/0 = NaN, as PyTorch.
template <class T>
Tensor<T> sum_or_mean(const char* op, std::source_location where, const Tensor<T>& a, const std::vector<bool>& reduced, bool keepdims, bool mean) {
  const ReducePlan p = plan_reduction(a.shape(), reduced, keepdims);
  xt::xarray<T> storage;
  const T* x = as_rows(a.value(), p, storage);
  const double divisor = mean ? static_cast<double>(p.cols) : 1.0;
  xt::xarray<T> out = xt::xarray<T>::from_shape(allocatable(p.out_shape, sizeof(T), op, "the output"));
  T* y = out.data();
  const std::size_t cols = p.cols;
  kernels::parallel_items(p.rows, cols, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const T* row = x + r * cols;
      double acc = 0.0;
      for (std::size_t j = 0; j < cols; ++j) acc += row[j];
      y[r] = static_cast<T>(acc / divisor);
    }
  });
  return make_result(op, where, std::move(out), should_record(a),
                     [a = detail::edge(a), kept = detail::as_dims(p.kept_shape), divisor](const Tensor<T>& g) {
                       // Every input element of a group receives its group's gradient (/ count).
                       Tensor<T> grad = expand(reshape(g, kept), detail::as_dims(a.shape()));
                       if (divisor != 1.0) grad = div(grad, Tensor<T>(xt::xarray<T>(static_cast<T>(divisor))));
                       accumulate(a, std::move(grad));
                     });
}

// Maximum (largest) or minimum per group. NaN propagates (a group holding NaN has extreme NaN and
// passes no gradient, since NaN equals nothing). The backward splits g evenly between the
// elements equal to the extreme, so `counts` (ties per group) is saved.
template <class T>
Tensor<T> extreme_impl(bool largest, std::source_location where, const Tensor<T>& a, const std::vector<bool>& reduced,
                       bool keepdims) {
  const char* op = largest ? "max" : "min";
  const Shape shape = a.shape();
  const ReducePlan p = plan_reduction(shape, reduced, keepdims);
  if (p.cols == 0) {
    throw ValueError(std::string(op) + ": cannot take the " + (largest ? "maximum" : "minimum") +
                     " over zero elements (reduced axes of shape " + format_shape(shape) + " have size 0)");
  }
  xt::xarray<T> storage;
  const T* x = as_rows(a.value(), p, storage);
  xt::xarray<T> out = xt::xarray<T>::from_shape(allocatable(p.out_shape, sizeof(T), op, "the output"));
  xt::xarray<T> counts = xt::xarray<T>::from_shape(p.out_shape);
  T* y = out.data();
  T* c = counts.data();
  const std::size_t cols = p.cols;
  kernels::parallel_items(p.rows, cols, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const T* row = x + r * cols;
      T m = row[0];
      std::size_t ties = 1;
      for (std::size_t j = 1; j < cols && !std::isnan(m); ++j) {
        if ((largest ? row[j] > m : row[j] < m) || std::isnan(row[j])) {
          m = row[j];
          ties = 1;
        } else if (row[j] == m) {
          ++ties;
        }
      }
      y[r] = m;
      c[r] = static_cast<T>(ties);
    }
  });
  // d max / dx is the indicator of the tied maxima, divided by their count: a constant.
  return make_result(op, where, std::move(out), should_record(a),
                     [a, kept = p.kept_shape, counts = Tensor<T>(std::move(counts))](const Tensor<T>& g, const Tensor<T>& y) {
                       const Shape in_shape = a.shape();
                       xt::xarray<T> is_max = kernels::broadcast_copy(y.value().data(), kept, in_shape);
                       const T* xv = a.value().data();
                       T* mv = is_max.data();
                       kernels::parallel_items(is_max.size(), 1, [&](std::size_t begin, std::size_t end) {
                         for (std::size_t i = begin; i < end; ++i) mv[i] = xv[i] == mv[i] ? T(1) : T(0);
                       });
                       const Tensor<T> share = reshape(div(g, counts), detail::as_dims(kept));
                       accumulate(a, mul(expand(share, detail::as_dims(in_shape)), Tensor<T>(std::move(is_max))));
                     });
}

}  // namespace

namespace detail {

template <class T>
ValuesIndices<T> extreme_along(bool largest, const Tensor<T>& a, Index dim, bool keepdim, CallSite where) {
  const char* op = largest ? "max" : "min";
  require_defined(a, op, "a");
  const Shape shape = a.shape();
  // A 0-d tensor is read as one lane of one element.
  const bool scalar = is_scalar_axis(dim, shape, op);
  const std::size_t d = scalar ? 0 : normalize_axis(dim, shape.size(), op, shape);
  const kernels::AxisLayout l = kernels::axis_layout(scalar ? Shape{1} : shape, d);
  if (l.n == 0) {
    throw ValueError(std::string(op) + ": axis " + std::to_string(dim) + " of shape " + format_shape(shape) +
                     " has size 0, so there is no element to pick");
  }
  Shape kept = shape;  // the input's shape with the axis kept as size 1
  Shape out_shape = shape;
  if (!scalar) {
    kept[d] = 1;
    if (!keepdim) out_shape.erase(out_shape.begin() + static_cast<std::ptrdiff_t>(d));
    else out_shape[d] = 1;
  }
  xt::xarray<T> values = xt::xarray<T>::from_shape(allocatable(out_shape, sizeof(T), op, "the output"));
  IndexArray indices = IndexArray::from_shape(out_shape);
  const T* x = a.value().data();
  T* v = values.data();
  Index* at = indices.data();
  // Lane r = o * inner + i reads x[(o * n + k) * inner + i] for k in [0, n): the first maximum
  // (minimum) wins, and a NaN beats everything and ends the scan.
  kernels::parallel_items(l.outer * l.inner, l.n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const T* lane = x + (r / l.inner) * l.n * l.inner + r % l.inner;
      std::size_t best = 0;
      T m = lane[0];
      for (std::size_t k = 1; k < l.n && !std::isnan(m); ++k) {
        const T xk = lane[k * l.inner];
        if ((largest ? xk > m : xk < m) || std::isnan(xk)) {
          m = xk;
          best = k;
        }
      }
      v[r] = m;
      at[r] = static_cast<Index>(best);
    }
  });
  // dL/da = g at each lane's picked element, 0 elsewhere: g spread over the lane times a constant
  // one-hot mask, recorded ops, so it differentiates again.
  Tensor<T> values_tensor = make_result(
      op, where, std::move(values), should_record(a), [a = edge(a), indices, l, kept = as_dims(kept)](const Tensor<T>& g) {
        xt::xarray<T> picked = xt::xarray<T>::from_shape(a.shape());
        picked.fill(T(0));
        T* p = picked.data();
        const Index* at = indices.data();
        for (std::size_t r = 0; r < indices.size(); ++r) {
          p[((r / l.inner) * l.n + static_cast<std::size_t>(at[r])) * l.inner + r % l.inner] = T(1);
        }
        accumulate(a, mul(expand(reshape(g, kept), as_dims(a.shape())), Tensor<T>(std::move(picked))));
      });
  return {std::move(values_tensor), std::move(indices)};
}

}  // namespace detail

template <class T>
Tensor<T> sum(const Tensor<T>& a, CallSite where) {
  require_defined(a, "sum", "a");
  return sum_or_mean("sum", where, a, all_axes(a.shape()), false, false);
}

template <class T>
Tensor<T> sum(const Tensor<T>& a, const Axes& axes, bool keepdims, CallSite where) {
  require_defined(a, "sum", "a");
  return sum_or_mean("sum", where, a, detail::axes_mask("sum", a.shape(), axes), keepdims, false);
}

template <class T>
Tensor<T> mean(const Tensor<T>& a, CallSite where) {
  require_defined(a, "mean", "a");
  return sum_or_mean("mean", where, a, all_axes(a.shape()), false, true);
}

template <class T>
Tensor<T> mean(const Tensor<T>& a, const Axes& axes, bool keepdims, CallSite where) {
  require_defined(a, "mean", "a");
  return sum_or_mean("mean", where, a, detail::axes_mask("mean", a.shape(), axes), keepdims, true);
}

template <class T>
Tensor<T> max(const Tensor<T>& a, CallSite where) {
  require_defined(a, "max", "a");
  return extreme_impl(true, where, a, all_axes(a.shape()), false);
}

template <class T>
Tensor<T> min(const Tensor<T>& a, CallSite where) {
  require_defined(a, "min", "a");
  return extreme_impl(false, where, a, all_axes(a.shape()), false);
}

template <class T>
Tensor<T> max(const Tensor<T>& a, const Axes& axes, bool keepdims, CallSite where) {
  require_defined(a, "max", "a");
  return extreme_impl(true, where, a, detail::axes_mask("max", a.shape(), axes), keepdims);
}

template <class T>
Tensor<T> sum_to(const Tensor<T>& a, const Shape& shape, CallSite where) {
  require_defined(a, "sum_to", "a");
  if (!kernels::broadcasts_to(shape, a.shape())) {
    throw ShapeError("sum_to: shape " + format_shape(shape) + " does not broadcast to the input's shape " +
                     format_shape(a.shape()));
  }
  return make_result("sum_to", where, kernels::sum_to(a.value(), shape), should_record(a),
                     [a = detail::edge(a)](const Tensor<T>& g) { accumulate(a, expand(g, detail::as_dims(a.shape()))); });
}

#define TAPEGRAD_INSTANTIATE_REDUCE(T)                            \
  template Tensor<T> sum(const Tensor<T>&, CallSite);                       \
  template Tensor<T> sum(const Tensor<T>&, const Axes&, bool, CallSite);    \
  template Tensor<T> mean(const Tensor<T>&, CallSite);                      \
  template Tensor<T> mean(const Tensor<T>&, const Axes&, bool, CallSite);   \
  template Tensor<T> max(const Tensor<T>&, CallSite);                       \
  template Tensor<T> max(const Tensor<T>&, const Axes&, bool, CallSite);    \
  template Tensor<T> min(const Tensor<T>&, CallSite);                       \
  template Tensor<T> sum_to(const Tensor<T>&, const Shape&, CallSite);              \
  template ValuesIndices<T> detail::extreme_along(bool, const Tensor<T>&, Index, bool, CallSite);
TAPEGRAD_INSTANTIATE_REDUCE(float)
TAPEGRAD_INSTANTIATE_REDUCE(double)

}  // namespace tapegrad
