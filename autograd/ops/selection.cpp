#include "autograd/ops/selection.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <xtensor/xoperation.hpp>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/kernels/simd/strided_copy.h"
#include "autograd/ops/indexing.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// Which operand each output element was taken from (clamp: a, min, max; where: a, b); its
// gradient goes there.
enum class Source : std::uint8_t { none, first, second, third };
using Sources = xt::xarray<std::uint8_t>;

// The broadcast shape of three operands; ShapeError naming all three when they do not broadcast.
Shape broadcast_three(const char* op, const char* names[3], const Shape shapes[3]) {
  try {
    return kernels::broadcast_shapes(kernels::broadcast_shapes(shapes[0], shapes[1], op), shapes[2], op);
  } catch (const ShapeError&) {
    throw ShapeError(std::string(op) + ": " + names[0] + " " + format_shape(shapes[0]) + ", " + names[1] + " " +
                     format_shape(shapes[1]) + " and " + names[2] + " " + format_shape(shapes[2]) +
                     " do not broadcast together");
  }
}

// An operand read at the output's shape: element i is data[i * stride]. A scalar (or an absent
// bound) has stride 0; a tensor of another shape is copied out to the output's shape.
template <class U>
struct Operand {
  const U* data;
  std::size_t stride;
  U operator[](std::size_t i) const { return data[i * stride]; }
};
template <class U>
Operand<U> at_shape(const xt::xarray<U>& x, const Shape& shape, xt::xarray<U>& storage) {
  if (std::equal(x.shape().begin(), x.shape().end(), shape.begin(), shape.end())) return {x.data(), 1};
  const Shape from(x.shape().begin(), x.shape().end());
  storage = kernels::broadcast_copy(x.data(), from, shape);
  return {storage.data(), 1};
}

// g where the output came from `source`, 0 elsewhere, summed back to `shape`: one input's vjp.
template <class T>
Tensor<T> routed(const Tensor<T>& g, const Sources& sources, Source source, const Shape& shape) {
  const Mask other = xt::not_equal(sources, static_cast<std::uint8_t>(source));
  return detail::unbroadcast(masked_fill(g, other, T(0)), shape);
}

// y = min(max(x, lo), hi), NaN when any of the three is, and where each element came from
// (PyTorch's clamp_backward_min_max: x where lo <= x <= hi, lo where x < lo <= hi, hi where x > hi
// or lo > hi). An absent bound is -inf / +inf, for which the same rule gives PyTorch's one-bound rule.
template <class T>
void clamp_kernel(std::size_t n, Operand<T> x, Operand<T> lo, Operand<T> hi, T* y, std::uint8_t* from) {
  kernels::parallel_items(n, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const T v = x[i], l = lo[i], h = hi[i];
      Source s = Source::none;
      if (l <= v && v <= h) s = Source::first;
      else if (v < l && l <= h) s = Source::second;
      else if (v > h || l > h) s = Source::third;
      const bool nan = std::isnan(v) || std::isnan(l) || std::isnan(h);
      y[i] = nan ? std::numeric_limits<T>::quiet_NaN() : s == Source::first ? v : s == Source::second ? l : h;
      from[i] = static_cast<std::uint8_t>(s);
    }
  });
}

template <class T>
void require_bound(const char* which, std::optional<T> bound, const Shape& shape) {
  if (bound && std::isnan(*bound)) {
    throw ValueError(std::string("clamp: ") + which + " is nan (input " + format_shape(shape) +
                     "); give std::nullopt for no bound");
  }
}

// True when x ranks before y in topk's order: larger first (smaller when !largest), with NaN above
// every number as in PyTorch (first when largest, last otherwise). A strict weak order: NaNs tie.
template <class T>
bool ranks_before(bool largest, T x, T y) {
  if (std::isnan(x) || std::isnan(y)) return largest ? !std::isnan(y) : !std::isnan(x);
  return largest ? x > y : x < y;
}

// topk's selection: for each lane along the axis (layout l) the k best positions, written to
// values and indices laid out as the input with the axis of size k. Each lane is copied out once
// (a non-last axis is strided) and ordered by (rank, index), a strict total order, so the result
// does not depend on the sort's algorithm or on the thread that runs it.
template <class T>
void topk_kernel(const T* x, const kernels::AxisLayout& l, std::size_t k, bool largest, bool sorted, T* values,
                 Index* indices) {
  kernels::parallel_items(l.outer * l.inner, l.n, [&](std::size_t begin, std::size_t end) {
    std::vector<T> lane(l.n);
    std::vector<Index> order(l.n);
    const auto before = [&](Index i, Index j) {
      const T xi = lane[static_cast<std::size_t>(i)], xj = lane[static_cast<std::size_t>(j)];
      return ranks_before(largest, xi, xj) || (!ranks_before(largest, xj, xi) && i < j);
    };
    for (std::size_t r = begin; r < end; ++r) {
      const std::size_t o = r / l.inner, i = r % l.inner;
      const T* from = x + o * l.n * l.inner + i;
      for (std::size_t j = 0; j < l.n; ++j) lane[j] = from[j * l.inner];
      for (std::size_t j = 0; j < l.n; ++j) order[j] = static_cast<Index>(j);
      const auto kth = order.begin() + static_cast<std::ptrdiff_t>(k);
      if (sorted) {
        std::partial_sort(order.begin(), kth, order.end(), before);
      } else {
        std::nth_element(order.begin(), kth, order.end(), before);
        std::sort(order.begin(), kth);  // unsorted: the selected elements in their order along the axis
      }
      for (std::size_t j = 0; j < k; ++j) {
        const std::size_t at = (o * k + j) * l.inner + i;
        indices[at] = order[j];
        values[at] = lane[static_cast<std::size_t>(order[j])];
      }
    }
  });
}

}  // namespace

template <class T>
Tensor<T> clamp(const Tensor<T>& a, std::optional<Scalar<T>> min, std::optional<Scalar<T>> max, CallSite where) {
  require_defined(a, "clamp", "a");
  const Shape shape = a.shape();
  if (!min && !max) {
    throw ValueError("clamp: at least one of 'min' and 'max' must be given (input " + format_shape(shape) + ")");
  }
  require_bound("min", min, shape);
  require_bound("max", max, shape);
  constexpr T inf = std::numeric_limits<T>::infinity();
  const T lo = min.value_or(-inf), hi = max.value_or(inf);
  auto y = xt::xarray<T>::from_shape(shape);
  auto sources = Sources::from_shape(shape);
  clamp_kernel(y.size(), Operand<T>{a.value().data(), 1}, Operand<T>{&lo, 0}, Operand<T>{&hi, 0}, y.data(),
               sources.data());
  return make_result("clamp", where, std::move(y), should_record(a, min.value_or(0), max.value_or(0)),
                     [a = detail::edge(a), sources = std::make_shared<const Sources>(std::move(sources))](const Tensor<T>& g) {
                       accumulate(a, routed(g, *sources, Source::first, a.shape()));
                     });
}

template <class T>
Tensor<T> clamp(const Tensor<T>& a, const Tensor<T>& min, const Tensor<T>& max, CallSite where) {
  require_defined(a, "clamp", "a");
  if (!min.defined() && !max.defined()) {
    throw ValueError("clamp: at least one of 'min' and 'max' must be defined (input " + format_shape(a.shape()) + ")");
  }
  constexpr T inf = std::numeric_limits<T>::infinity();
  const xt::xarray<T> absent_min = xt::xarray<T>(-inf), absent_max = xt::xarray<T>(inf);
  const xt::xarray<T>& lo = min.defined() ? min.value() : absent_min;
  const xt::xarray<T>& hi = max.defined() ? max.value() : absent_max;
  const char* names[3] = {"a", "min", "max"};
  const Shape shapes[3] = {a.shape(), Shape(lo.shape().begin(), lo.shape().end()), Shape(hi.shape().begin(), hi.shape().end())};
  const Shape shape = broadcast_three("clamp", names, shapes);
  xt::xarray<T> storage[3];
  const Operand<T> x = at_shape(a.value(), shape, storage[0]);
  const Operand<T> l = min.defined() ? at_shape(lo, shape, storage[1]) : Operand<T>{lo.data(), 0};
  const Operand<T> h = max.defined() ? at_shape(hi, shape, storage[2]) : Operand<T>{hi.data(), 0};
  auto y = xt::xarray<T>::from_shape(allocatable(shape, sizeof(T), "clamp", "the output"));
  auto sources = Sources::from_shape(shape);
  clamp_kernel(y.size(), x, l, h, y.data(), sources.data());
  return make_result("clamp", where, std::move(y), should_record(a, min, max),
                     [a = detail::edge(a), min = detail::edge(min), max = detail::edge(max),
                      sources = std::make_shared<const Sources>(std::move(sources))](const Tensor<T>& g) {
                       if (a.requires_grad()) accumulate(a, routed(g, *sources, Source::first, a.shape()));
                       if (min.requires_grad()) accumulate(min, routed(g, *sources, Source::second, min.shape()));
                       if (max.requires_grad()) accumulate(max, routed(g, *sources, Source::third, max.shape()));
                     });
}

template <class T>
Tensor<T> where(const Mask& condition, const Tensor<T>& a, const Tensor<T>& b, CallSite site) {
  require_defined(a, "where", "a");
  require_defined(b, "where", "b");
  const char* names[3] = {"condition", "a", "b"};
  const Shape shapes[3] = {Shape(condition.shape().begin(), condition.shape().end()), a.shape(), b.shape()};
  const Shape shape = broadcast_three("where", names, shapes);
  xt::xarray<bool> condition_storage;
  xt::xarray<T> storage[2];
  const Operand<bool> c = at_shape(condition, shape, condition_storage);
  const Operand<T> x = at_shape(a.value(), shape, storage[0]);
  const Operand<T> z = at_shape(b.value(), shape, storage[1]);
  auto y = xt::xarray<T>::from_shape(allocatable(shape, sizeof(T), "where", "the output"));
  auto sources = Sources::from_shape(shape);
  T* out = y.data();
  std::uint8_t* from = sources.data();
  kernels::parallel_items(y.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      out[i] = c[i] ? x[i] : z[i];
      from[i] = static_cast<std::uint8_t>(c[i] ? Source::first : Source::second);
    }
  });
  return make_result("where", site, std::move(y), should_record(a, b),
                     [a = detail::edge(a), b = detail::edge(b),
                      sources = std::make_shared<const Sources>(std::move(sources))](const Tensor<T>& g) {
                       if (a.requires_grad()) accumulate(a, routed(g, *sources, Source::first, a.shape()));
                       if (b.requires_grad()) accumulate(b, routed(g, *sources, Source::second, b.shape()));
                     });
}

template <class T>
ValuesIndices<T> topk(const Tensor<T>& a, Index k, Index dim, bool largest, bool sorted, CallSite where) {
  require_defined(a, "topk", "a");
  const Shape shape = a.shape();
  // A 0-d tensor is one lane of one element, and its output is 0-d whether k is 0 or 1 (PyTorch).
  const bool scalar = is_scalar_axis(dim, shape, "topk");
  const std::size_t d = scalar ? 0 : normalize_axis(dim, shape.size(), "topk", shape);
  const kernels::AxisLayout l = kernels::axis_layout(scalar ? Shape{1} : shape, d);
  if (k < 0 || static_cast<std::size_t>(k) > l.n) {
    throw ValueError("topk: k = " + std::to_string(k) + " is out of range [0, " + std::to_string(l.n) + "] for dim " +
                     std::to_string(dim) + " of a tensor of shape " + format_shape(shape));
  }
  const std::size_t picked = scalar ? 1 : static_cast<std::size_t>(k);
  Shape out_shape = shape;
  if (!scalar) out_shape[d] = picked;
  auto values = xt::xarray<T>::from_shape(allocatable(out_shape, sizeof(T), "topk", "the values"));
  IndexArray indices = IndexArray::from_shape(out_shape);
  topk_kernel(a.value().data(), l, picked, largest, sorted, values.data(), indices.data());
  Tensor<T> values_tensor = make_result("topk", where, std::move(values), should_record(a),
                                        [a = detail::edge(a), indices, d](const Tensor<T>& g) {
                                          const auto axis = static_cast<Index>(d);
                                          accumulate(a, scatter_add(Tensor<T>::zeros(a.shape()), axis, indices, g));
                                        });
  return {std::move(values_tensor), std::move(indices)};
}

#define TAPEGRAD_INSTANTIATE_SELECTION(T)                                                                 \
  template Tensor<T> clamp(const Tensor<T>&, std::optional<T>, std::optional<T>, CallSite);              \
  template Tensor<T> clamp(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, CallSite);              \
  template Tensor<T> where(const Mask&, const Tensor<T>&, const Tensor<T>&, CallSite);                \
  template ValuesIndices<T> topk(const Tensor<T>&, Index, Index, bool, bool, CallSite);
TAPEGRAD_INSTANTIATE_SELECTION(float)
TAPEGRAD_INSTANTIATE_SELECTION(double)

}  // namespace tapegrad
