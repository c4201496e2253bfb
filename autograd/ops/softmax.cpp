#include "autograd/ops/softmax.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include <xtensor/xoperation.hpp>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/kernels/simd/simd_span.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;
using kernels::AxisLayout;
using kernels::kLaneBlock;

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// The kernels below work on one block of adjacent lanes (see kernels::for_each_lane_block):
// element k of lane j is at [k * stride + j]; per-lane accumulators live in local arrays. On the
// last axis (Width is kernels::One) a lane is one contiguous row and its reductions and exp use
// xsimd; otherwise the inner loops run across neighbouring lanes, which are contiguous.
template <class Width>
constexpr bool kIsRow = std::is_same_v<Width, kernels::One>;

// m[j] = the maximum of lane j.
template <class T, class Stride, class Width>
void lane_max(const T* x, std::size_t n, Stride stride, Width width, T* m) {
  if constexpr (kIsRow<Width>) {
    m[0] = kernels::simd::max(x, n);
  } else {
    for (std::size_t j = 0; j < width; ++j) m[j] = kNegInf<T>;
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t j = 0; j < width; ++j) m[j] = std::max(m[j], x[k * stride + j]);
  }
}

// s[j] = the sum of lane j.
template <class T, class Stride, class Width>
void lane_sum(const T* x, std::size_t n, Stride stride, Width width, T* s) {
  if constexpr (kIsRow<Width>) {
    s[0] = kernels::simd::sum(x, n);
  } else {
    for (std::size_t j = 0; j < width; ++j) s[j] = T(0);
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t j = 0; j < width; ++j) s[j] += x[k * stride + j];
  }
}

// p = exp(p) over the block: one span when the block is contiguous, else one span per k.
template <class T, class Stride, class Width>
void block_exp(T* p, std::size_t n, Stride stride, Width width) {
  if (std::size_t(width) == std::size_t(stride)) {
    kernels::simd::exp_inplace(p, n * width);
  } else {
    for (std::size_t k = 0; k < n; ++k) kernels::simd::exp_inplace(p + k * stride, std::size_t(width));
  }
}

// e = exp(x - m) with m[j] the lane maximum, and s[j] = sum_k e. A lane whose entries are all
// -inf gets m = 0, so that x - m stays -inf (exp gives an exact 0, and s = 0) instead of
// -inf - -inf = NaN; s == 0 marks exactly those lanes.
template <class T, class Stride, class Width>
void shifted_exp(const T* x, T* e, std::size_t n, Stride stride, Width width, T* m, T* s) {
  lane_max(x, n, stride, width, m);
  for (std::size_t j = 0; j < width; ++j)
    if (m[j] == kNegInf<T>) m[j] = T(0);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t j = 0; j < width; ++j) e[k * stride + j] = x[k * stride + j] - m[j];
  block_exp(e, n, stride, width);
  lane_sum(e, n, stride, width, s);
}

template <class T>
xt::xarray<T> softmax_forward(const xt::xarray<T>& x, const AxisLayout& l) {
  auto y = xt::xarray<T>::from_shape(x.shape());
  const T* px = x.data();
  T* py = y.data();
  kernels::for_each_lane_block(l, [&](std::size_t offset, auto stride, auto width) {
    T m[kLaneBlock], inv[kLaneBlock];
    T* yb = py + offset;
    shifted_exp(px + offset, yb, l.n, stride, width, m, inv);
    // A fully masked lane (sum 0) becomes zeros rather than 0/0.
    for (std::size_t j = 0; j < width; ++j) inv[j] = inv[j] == T(0) ? T(0) : T(1) / inv[j];
    for (std::size_t k = 0; k < l.n; ++k)
      for (std::size_t j = 0; j < width; ++j) yb[k * stride + j] *= inv[j];
  });
  return y;
}

// y = x - (m + log s); a fully masked lane (s == 0) keeps its -inf entries: shift 0.
template <class T>
xt::xarray<T> log_softmax_forward(const xt::xarray<T>& x, const AxisLayout& l) {
  auto y = xt::xarray<T>::from_shape(x.shape());
  const T* px = x.data();
  T* py = y.data();
  kernels::for_each_lane_block(l, [&](std::size_t offset, auto stride, auto width) {
    T m[kLaneBlock], shift[kLaneBlock];
    const T* xb = px + offset;
    T* yb = py + offset;
    shifted_exp(xb, yb, l.n, stride, width, m, shift);  // the exponentials only feed the sums
    for (std::size_t j = 0; j < width; ++j) shift[j] = shift[j] == T(0) ? T(0) : m[j] + std::log(shift[j]);
    for (std::size_t k = 0; k < l.n; ++k)
      for (std::size_t j = 0; j < width; ++j) yb[k * stride + j] = xb[k * stride + j] - shift[j];
  });
  return y;
}

// dx = y * (g - sum_k g y). A fully masked lane has y = 0, hence dx = 0.
template <class T>
xt::xarray<T> softmax_backward(const xt::xarray<T>& g, const xt::xarray<T>& y, const AxisLayout& l) {
  auto dx = xt::xarray<T>::from_shape(y.shape());
  kernels::for_each_lane_block(l, [&](std::size_t offset, auto stride, auto width) {
    const T *gb = g.data() + offset, *yb = y.data() + offset;
    T* db = dx.data() + offset;
    T dot[kLaneBlock];
    for (std::size_t k = 0; k < l.n; ++k)
      for (std::size_t j = 0; j < width; ++j) db[k * stride + j] = gb[k * stride + j] * yb[k * stride + j];
    lane_sum(db, l.n, stride, width, dot);
    for (std::size_t k = 0; k < l.n; ++k) {
      for (std::size_t j = 0; j < width; ++j) {
        const std::size_t i = k * stride + j;
        db[i] = yb[i] * (gb[i] - dot[j]);
      }
    }
  });
  return dx;
}

// dx = g - exp(y) * sum_k g. A fully masked lane (every y is -inf) is a constant of x: dx = 0.
template <class T>
xt::xarray<T> log_softmax_backward(const xt::xarray<T>& g, const xt::xarray<T>& y, const AxisLayout& l) {
  auto dx = xt::xarray<T>::from_shape(y.shape());
  kernels::for_each_lane_block(l, [&](std::size_t offset, auto stride, auto width) {
    const T *gb = g.data() + offset, *yb = y.data() + offset;
    T* db = dx.data() + offset;
    T sum[kLaneBlock], top[kLaneBlock], gain[kLaneBlock];
    lane_sum(gb, l.n, stride, width, sum);
    lane_max(yb, l.n, stride, width, top);
    for (std::size_t j = 0; j < width; ++j) {
      gain[j] = top[j] == kNegInf<T> ? T(0) : T(1);
      sum[j] *= gain[j];
    }
    for (std::size_t k = 0; k < l.n; ++k)
      for (std::size_t j = 0; j < width; ++j) db[k * stride + j] = yb[k * stride + j];
    block_exp(db, l.n, stride, width);  // db = softmax = exp(y)
    for (std::size_t k = 0; k < l.n; ++k) {
      for (std::size_t j = 0; j < width; ++j) {
        const std::size_t i = k * stride + j;
        db[i] = gain[j] * gb[i] - db[i] * sum[j];
      }
    }
  });
  return dx;
}

// The softmax axis, normalized, for the formulas' reductions, and its layout for the kernels.
struct Lanes {
  Index axis;
  AxisLayout layout;
};

template <class T>
Lanes checked_lanes(const Tensor<T>& a, Index axis, const char* op) {
  require_defined(a, op, "a");
  // A 0-d tensor (axis 0 or -1, as PyTorch) is one lane of one element.
  if (is_scalar_axis(axis, a.shape(), op)) return {0, kernels::axis_layout(Shape{1}, 0)};
  const std::size_t normalized = normalize_axis(axis, a.ndim(), op, a.shape());
  return {static_cast<Index>(normalized), kernels::axis_layout(a.shape(), normalized)};
}

// The backward ops: their values are the fused kernels above, their formulas (the second
// derivatives) tapegrad's ops. Sums are over the lane, kept as an axis of size 1.

// dx = y (g - s), s = sum_k g_k y_k. With gg the gradient of dx:
//   d/dg = y (gg - sum_k gg_k y_k), softmax_backward(gg, y) again;
//   d/dy = gg (g - s) - g sum_k gg_k y_k.
template <class T>
Tensor<T> softmax_backward(const Tensor<T>& g, const Tensor<T>& y, const Lanes& lanes,
                           CallSite where = std::source_location::current()) {
  return make_result("softmax_backward", where, softmax_backward(g.value(), y.value(), lanes.layout),
                     should_record(g, y), [g, y, lanes](const Tensor<T>& gg) {
                       if (g.requires_grad()) accumulate(g, softmax_backward(gg, y, lanes));
                       if (y.requires_grad()) {
                         const Tensor<T> s = sum(mul(g, y), {lanes.axis}, true);
                         const Tensor<T> r = sum(mul(gg, y), {lanes.axis}, true);
                         accumulate(y, sub(mul(gg, sub(g, s)), mul(g, r)));
                       }
                     });
}

// dx = live (g - p sum_k g_k), p = exp(y), live = 0 on a fully masked lane (every y is -inf), else
// 1. With gg the gradient of dx:
//   d/dg = live (gg - sum_k gg_k p_k)  (the transposed Jacobian, not log_softmax_backward);
//   d/dy = -gg p sum_k g_k  (0 on a fully masked lane, where p = 0).
template <class T>
Tensor<T> log_softmax_backward(const Tensor<T>& g, const Tensor<T>& y, const Lanes& lanes,
                               CallSite where = std::source_location::current()) {
  return make_result("log_softmax_backward", where, log_softmax_backward(g.value(), y.value(), lanes.layout),
                     should_record(g, y), [g, y, lanes](const Tensor<T>& gg) {
                       const Tensor<T> p = exp(y);
                       if (g.requires_grad()) {
                         // A constant: a lane's maximum is -inf only on a fully masked lane.
                         const xt::xarray<T> top = max(y.detach(), {lanes.axis}, true).value();
                         const Tensor<T> live(xt::xarray<T>(xt::cast<T>(xt::not_equal(top, kNegInf<T>))));
                         accumulate(g, mul(sub(gg, sum(mul(gg, p), {lanes.axis}, true)), live));
                       }
                       if (y.requires_grad()) accumulate(y, mul(mul(neg(gg), p), sum(g, {lanes.axis}, true)));
                     });
}

}  // namespace

template <class T>
Tensor<T> softmax(const Tensor<T>& a, Index axis, CallSite where) {
  const Lanes lanes = checked_lanes(a, axis, "softmax");
  return make_result("softmax", where, softmax_forward(a.value(), lanes.layout), should_record(a),
                     [a = detail::edge(a), lanes](const Tensor<T>& g, const Tensor<T>& y) {
                       accumulate(a, softmax_backward(g, y, lanes));
                     });
}

template <class T>
Tensor<T> log_softmax(const Tensor<T>& a, Index axis, CallSite where) {
  const Lanes lanes = checked_lanes(a, axis, "log_softmax");
  return make_result("log_softmax", where, log_softmax_forward(a.value(), lanes.layout), should_record(a),
                     [a = detail::edge(a), lanes](const Tensor<T>& g, const Tensor<T>& y) {
                       accumulate(a, log_softmax_backward(g, y, lanes));
                     });
}

#define TAPEGRAD_INSTANTIATE_SOFTMAX(T)                \
  template Tensor<T> softmax(const Tensor<T>&, Index, CallSite); \
  template Tensor<T> log_softmax(const Tensor<T>&, Index, CallSite);
TAPEGRAD_INSTANTIATE_SOFTMAX(float)
TAPEGRAD_INSTANTIATE_SOFTMAX(double)

}  // namespace tapegrad
