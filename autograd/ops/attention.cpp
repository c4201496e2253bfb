#include "autograd/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/kernels/simd/simd_span.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// Where each row's mask starts, and the step along the row (0 when the mask's last axis is 1):
// the mask is read through broadcast strides instead of being expanded to the scores' shape.
struct MaskRows {
  std::vector<std::size_t> offset;
  std::size_t step = 1;
};

MaskRows mask_rows(const Shape& mask_shape, const Shape& shape, std::size_t rows) {
  const std::size_t nd = shape.size(), lead = nd - mask_shape.size();
  std::vector<std::size_t> stride(nd, 0);  // stride of each scores axis in the mask (0: broadcast)
  for (std::size_t d = nd, s = 1; d-- > lead;) {
    if (mask_shape[d - lead] != 1) stride[d] = s;
    s *= mask_shape[d - lead];
  }
  MaskRows m;
  m.step = stride[nd - 1];
  m.offset.resize(rows);
  std::vector<std::size_t> index(nd, 0);
  std::size_t at = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    m.offset[r] = at;
    for (std::size_t d = nd - 1; d-- > 0;) {  // odometer over the leading axes
      at += stride[d];
      if (++index[d] < shape[d]) break;
      at -= stride[d] * index[d];
      index[d] = 0;
    }
  }
  return m;
}

// Rows [begin, end) of the scores x: y = softmax over the allowed positions of scale * x, 0
// elsewhere; uniform where nothing is allowed, and live[r] = 0 there. The exps of the rows run as
// one pass (exp_rows_inplace), after every row is scaled, masked and shifted by its maximum.
template <class T>
void attention_rows(const T* x, const Mask* allowed, const MaskRows& mask, std::size_t begin, std::size_t end,
                    std::size_t n, T scale, T* y, std::uint8_t* live) {
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  for (std::size_t r = begin; r < end; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    if (allowed) {
      const bool* allow = allowed->data() + mask.offset[r];
      for (std::size_t k = 0; k < n; ++k) yr[k] = allow[k * mask.step] ? xr[k] * scale : neg_inf;
    } else {
      for (std::size_t k = 0; k < n; ++k) yr[k] = xr[k] * scale;
    }
    const T m = kernels::simd::max(yr, n);
    live[r] = m != neg_inf;
    if (!live[r]) continue;  // filled below, after the exps (which leave -inf at 0)
    for (std::size_t k = 0; k < n; ++k) yr[k] -= m;
  }
  kernels::simd::exp_rows_inplace(y + begin * n, end - begin, n);  // exp(-inf) is exactly 0
  for (std::size_t r = begin; r < end; ++r) {
    T* yr = y + r * n;
    if (!live[r]) {
      std::fill_n(yr, n, T(1) / static_cast<T>(n));
      continue;
    }
    const T inv = T(1) / kernels::simd::sum(yr, n);
    for (std::size_t k = 0; k < n; ++k) yr[k] *= inv;
  }
}

// attention_softmax's backward, dx = scale * y * (g - sum_j g_j y_j) on live rows and 0 on the
// others, as an op of its own. Its backward, for a gradient u of dx:
//   d/dg = scale * y * (u - sum_j u_j y_j), the same op on u;
//   d/dy = scale * (u * (g - sum_j g_j y_j) - g * sum_j u_j y_j) on live rows, 0 on the others.
template <class T>
Tensor<T> attention_softmax_backward(const Tensor<T>& g, const Tensor<T>& y,
                                     const std::shared_ptr<const std::vector<std::uint8_t>>& live, std::size_t n,
                                     T scale, CallSite where = std::source_location::current()) {
  auto dx = xt::xarray<T>::from_shape(g.value().shape());
  const T *gv = g.value().data(), *yv = y.value().data();
  kernels::parallel_items(live->size(), n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const T *gr = gv + r * n, *yr = yv + r * n;
      T* dr = dx.data() + r * n;
      if (!(*live)[r]) {
        std::fill_n(dr, n, T(0));
        continue;
      }
      const T dot = kernels::simd::sum_of<T>(n, [&](auto at) { return at(gr) * at(yr); });
      for (std::size_t k = 0; k < n; ++k) dr[k] = scale * yr[k] * (gr[k] - dot);
    }
  });
  return make_result("attention_softmax_backward", where, std::move(dx), should_record(g, y),
                     [g, y, live, n, scale](const Tensor<T>& u) {
                       if (g.requires_grad()) accumulate(g, attention_softmax_backward(u, y, live, n, scale));
                       if (!y.requires_grad()) return;
                       const Tensor<T> gy = sum(mul(g, y), {-1}, true), uy = sum(mul(u, y), {-1}, true);
                       Tensor<T> dy = mul(sub(mul(u, sub(g, gy)), mul(g, uy)), scale);
                       if (std::find(live->begin(), live->end(), 0) != live->end()) {  // dx is 0 there, whatever y
                         Shape rows = y.shape();
                         rows.back() = 1;
                         xt::xarray<T> keep = xt::xarray<T>::from_shape(rows);
                         std::copy(live->begin(), live->end(), keep.begin());
                         dy = mul(dy, Tensor<T>(std::move(keep)));
                       }
                       accumulate(y, std::move(dy));
                     });
}

}  // namespace

template <class T>
Tensor<T> attention_softmax(const Tensor<T>& scores, const std::optional<AttendMask>& may_attend, Scalar<T> scale, CallSite where) {
  require_defined(scores, "attention_softmax", "scores");
  const Shape shape = scores.shape();
  if (shape.empty()) throw ShapeError("attention_softmax: scores must have at least 1 dim, got []");
  if (!std::isfinite(static_cast<double>(scale)))
    throw ValueError("attention_softmax: scale must be finite, got " + format_number(static_cast<double>(scale)));
  const std::size_t n = shape.back(), rows = n == 0 ? 0 : scores.numel() / n;
  MaskRows mask;
  const Mask* allowed = may_attend ? &may_attend->may_attend() : nullptr;
  if (allowed) {
    const Shape mask_shape(allowed->shape().begin(), allowed->shape().end());
    if (!kernels::broadcasts_to(mask_shape, shape)) {
      throw ShapeError("attention_softmax: may_attend of shape " + format_shape(mask_shape) +
                       " does not broadcast to the scores' shape " + format_shape(shape));
    }
    mask = mask_rows(mask_shape, shape, rows);
  }
  auto y = xt::xarray<T>::from_shape(shape);
  std::vector<std::uint8_t> live(rows);  // rows with an allowed position (the others get no gradient)
  const T* x = scores.value().data();
  kernels::parallel_items(rows, n, [&](std::size_t begin, std::size_t end) {
    attention_rows(x, allowed, mask, begin, end, n, scale, y.data(), live.data());
  });
  return make_result("attention_softmax", where, std::move(y), should_record(scores),
                     [scores = detail::edge(scores), live = std::make_shared<const std::vector<std::uint8_t>>(std::move(live)), n,
                      scale](const Tensor<T>& g, const Tensor<T>& y) {
                       accumulate(scores, attention_softmax_backward(g, y, live, n, scale));
                     });
}

template Tensor<float> attention_softmax(const Tensor<float>&, const std::optional<AttendMask>&, float, CallSite);
template Tensor<double> attention_softmax(const Tensor<double>&, const std::optional<AttendMask>&, double, CallSite);

}  // namespace tapegrad
