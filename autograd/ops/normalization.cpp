#include "autograd/ops/normalization.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "autograd/ops/detail/dims.h"
#include "autograd/core/record.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/kernels/simd/simd_span.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;
namespace simd = kernels::simd;

// Rows per chunk of the weight/bias gradient: each chunk sums its rows into a partial of its own
// and the partials are added in chunk order, so the sum is the same at any thread count.
constexpr std::size_t kChunkRows = 32;

void check_layer_norm(const Shape& x, const Shape& normalized, const Shape* weight, const Shape* bias, double eps) {
  if (normalized.empty()) {
    throw ShapeError("layer_norm: normalized_shape [] is empty; it must name at least the last axis of x " +
                     format_shape(x));
  }
  if (normalized.size() > x.size() || !std::equal(normalized.begin(), normalized.end(), x.end() - normalized.size())) {
    throw ShapeError("layer_norm: normalized_shape " + format_shape(normalized) +
                     " does not match the trailing dims of x " + format_shape(x));
  }
  for (const auto& [name, shape] : {std::pair{"weight", weight}, std::pair{"bias", bias}}) {
    if (shape && *shape != normalized) {
      throw ShapeError(std::string("layer_norm: ") + name + " has shape " + format_shape(*shape) +
                       " but must have normalized_shape " + format_shape(normalized));
    }
  }
  check_layer_norm_eps(eps, "layer_norm");
}

// Per-row statistics, saved by the forward for the backward.
template <class T>
struct RowMoments {
  xt::xarray<T> mean, rstd;  // [rows]; rstd = 1 / sqrt(var + eps), var biased
};

// y = (x - mean) * rstd * w + b over rows of n elements; w and b may be null (1 and 0).
template <class T>
RowMoments<T> layer_norm_forward(const T* x, T* y, std::size_t rows, std::size_t n, const T* w, const T* b, T eps) {
  RowMoments<T> stats{xt::xarray<T>::from_shape({rows}), xt::xarray<T>::from_shape({rows})};
  T* mean = stats.mean.data();
  T* rstd = stats.rstd.data();
  kernels::parallel_items(rows, n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      // Two passes (mean, then squared deviations): no cancellation, unlike E[x^2] - E[x]^2.
      const T mu = simd::sum(xr, n) / static_cast<T>(n);
      const T sq = simd::sum_of<T>(n, [&](auto at) {
        const auto d = at(xr) - mu;
        return d * d;
      });
      const T rs = T(1) / std::sqrt(sq / static_cast<T>(n) + eps);
      for (std::size_t c = 0; c < n; ++c) yr[c] = (xr[c] - mu) * rs * (w ? w[c] : T(1)) + (b ? b[c] : T(0));
      mean[r] = mu;
      rstd[r] = rs;
    }
  });
  return stats;
}

// With xhat = (x - mean) * rstd and h = g * w:
//   dx = rstd * (h - mean_c(h) - xhat * mean_c(h * xhat)),  dw = sum_rows g * xhat,  db = sum_rows g.
// Any of dx, dw, db may be null (not wanted). dw and db have n elements and are overwritten.
template <class T>
void layer_norm_backward_kernel(const T* g, const T* x, const RowMoments<T>& stats, std::size_t rows, std::size_t n,
                                const T* w, T* dx, T* dw, T* db) {
  const T* mean = stats.mean.data();
  const T* rstd = stats.rstd.data();
  const std::size_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  xt::xarray<T> dw_part = xt::zeros<T>({dw ? chunks : 0, n});
  xt::xarray<T> db_part = xt::zeros<T>({db ? chunks : 0, n});
  kernels::parallel_items(chunks, kChunkRows * n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t chunk = begin; chunk < end; ++chunk) {
      T* dw_c = dw ? dw_part.data() + chunk * n : nullptr;
      T* db_c = db ? db_part.data() + chunk * n : nullptr;
      for (std::size_t r = chunk * kChunkRows; r < std::min(rows, (chunk + 1) * kChunkRows); ++r) {
        const T *gr = g + r * n, *xr = x + r * n;
        const T mu = mean[r], rs = rstd[r];
        if (dx) {
          // h = g * w; the sums are over the row.
          const auto h = [&](auto at) { return w ? at(gr) * at(w) : at(gr); };
          const T sum_h = simd::sum_of<T>(n, h);
          const T sum_hx = simd::sum_of<T>(n, [&](auto at) { return h(at) * (at(xr) - mu); }) * rs;
          const T mean_h = sum_h / static_cast<T>(n), mean_hx = sum_hx / static_cast<T>(n);
          T* dr = dx + r * n;
          for (std::size_t c = 0; c < n; ++c) {
            const T xhat = (xr[c] - mu) * rs;
            dr[c] = rs * (gr[c] * (w ? w[c] : T(1)) - mean_h - xhat * mean_hx);
          }
        }
        if (dw_c)
          for (std::size_t c = 0; c < n; ++c) dw_c[c] += gr[c] * (xr[c] - mu) * rs;
        if (db_c)
          for (std::size_t c = 0; c < n; ++c) db_c[c] += gr[c];
      }
    }
  });
  for (auto [out, part] : {std::pair{dw, &dw_part}, std::pair{db, &db_part}}) {
    if (!out) continue;
    std::fill(out, out + n, T(0));
    for (std::size_t chunk = 0; chunk < chunks; ++chunk)
      for (std::size_t c = 0; c < n; ++c) out[c] += part->data()[chunk * n + c];
  }
}

// Second order. The backward above re-expressed with differentiable ops, per row of x seen as
// [rows, n]: xhat = (x - mean) * r with r = (var + eps)^-1/2, and the projection
//   P(v) = v - mean(v) - xhat * mean(v * xhat),
// so that dx = r * P(h) with h = g * w. P is self-adjoint and d xhat = r * P(d x).
template <class T>
struct Standardized {
  Tensor<T> r, xhat;  // [rows, 1], [rows, n]
};

template <class T>
Standardized<T> standardize(const Tensor<T>& x, std::size_t rows, std::size_t n, double eps) {
  const Tensor<T> x2 = reshape(x, {static_cast<Index>(rows), static_cast<Index>(n)});
  const Tensor<T> xc = sub(x2, mean(x2, {1}, true));
  const Tensor<T> r = pow(add(mean(mul(xc, xc), {1}, true), static_cast<T>(eps)), T(-0.5));
  return {r, mul(xc, r)};
}

template <class T>
Tensor<T> project(const Tensor<T>& v, const Tensor<T>& xhat) {
  return sub(sub(v, mean(v, {1}, true)), mul(xhat, mean(mul(v, xhat), {1}, true)));
}

// The gradients the kernel computes (each undefined when not wanted), each an op of its own whose
// backward, for a gradient u of it, is (rows seen as [rows, n], w and u_w broadcast over them):
//   dx = r P(g w):    d/dg = w r P(u),  d/dw = sum_rows g r P(u),
//                     d/dx = -r^2 (mean(u q) xhat + mean(h xhat) P(u) + mean(u xhat) q), q = P(h);
//   dw = sum_rows g xhat:  d/dg = xhat u_w,  d/dx = r P(g u_w);
//   db = sum_rows g:       d/dg = u_b.
template <class T>
struct LayerNormGrads {
  Tensor<T> dx, dw, db;
};

template <class T>
LayerNormGrads<T> layer_norm_backward(const Tensor<T>& g, const Tensor<T>& x, const Tensor<T>& weight,
                                      const Shape& normalized, const RowMoments<T>& stats, double eps, bool want_x,
                                      bool want_w, bool want_b, CallSite where = std::source_location::current()) {
  const std::size_t rows = stats.mean.size();
  const std::size_t n = shape_product(normalized);
  xt::xarray<T> dx, dw, db;  // allocated only for the gradients wanted
  if (want_x) dx = xt::xarray<T>::from_shape(x.shape());
  if (want_w) dw = xt::xarray<T>::from_shape(normalized);
  if (want_b) db = xt::xarray<T>::from_shape(normalized);
  layer_norm_backward_kernel(g.value().data(), x.value().data(), stats, rows, n,
                             weight.defined() ? weight.value().data() : nullptr, want_x ? dx.data() : nullptr,
                             want_w ? dw.data() : nullptr, want_b ? db.data() : nullptr);

  const auto as_rows = [rows, n](const Tensor<T>& t) {
    return reshape(t, {static_cast<Index>(rows), static_cast<Index>(n)});
  };
  const auto as_x = [x_dims = detail::as_dims(x.shape())](const Tensor<T>& t) { return reshape(t, x_dims); };
  const auto as_row = [n](const Tensor<T>& t) { return reshape(t, {static_cast<Index>(n)}); };
  LayerNormGrads<T> out;
  if (want_x) {
    out.dx = make_result(
        "layer_norm_backward", where, std::move(dx), should_record(g, x, weight),
        [=](const Tensor<T>& u) {
          const Standardized<T> s = standardize(x, rows, n, eps);
          const Tensor<T> g2 = as_rows(g), u2 = as_rows(u);
          const Tensor<T> pu = project(u2, s.xhat), r_pu = mul(s.r, pu);
          if (g.requires_grad()) accumulate(g, as_x(weight.defined() ? mul(r_pu, as_row(weight)) : r_pu));
          if (weight.defined() && weight.requires_grad()) {
            accumulate(weight, reshape(sum(mul(g2, r_pu), {0}), detail::as_dims(normalized)));
          }
          if (x.requires_grad()) {
            const Tensor<T> h = weight.defined() ? mul(g2, as_row(weight)) : g2;
            const Tensor<T> q = project(h, s.xhat);
            const auto row_mean = [](const Tensor<T>& a, const Tensor<T>& b) { return mean(mul(a, b), {1}, true); };
            const Tensor<T> sum_terms = add(add(mul(row_mean(u2, q), s.xhat), mul(row_mean(h, s.xhat), pu)),
                                            mul(row_mean(u2, s.xhat), q));
            accumulate(x, as_x(neg(mul(mul(s.r, s.r), sum_terms))));
          }
        });
  }
  if (want_w) {
    out.dw = make_result("layer_norm_backward_weight", where, std::move(dw), should_record(g, x),
                         [=](const Tensor<T>& u) {
                           const Standardized<T> s = standardize(x, rows, n, eps);
                           if (g.requires_grad()) accumulate(g, as_x(mul(s.xhat, as_row(u))));
                           if (x.requires_grad()) {
                             accumulate(x, as_x(mul(s.r, project(mul(as_rows(g), as_row(u)), s.xhat))));
                           }
                         });
  }
  if (want_b) {
    out.db = make_result("layer_norm_backward_bias", where, std::move(db), should_record(g),
                         [g = detail::edge(g)](const Tensor<T>& u) {
                           accumulate(g, expand(u, detail::as_dims(g.shape())));
                         });
  }
  return out;
}

}  // namespace

template <class T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight, const Tensor<T>& bias,
                     double eps, CallSite where) {
  require_defined(x, "layer_norm", "x");
  const Shape x_shape = x.shape();
  const Shape w_shape = weight.defined() ? weight.shape() : Shape{};
  const Shape b_shape = bias.defined() ? bias.shape() : Shape{};
  check_layer_norm(x_shape, normalized_shape, weight.defined() ? &w_shape : nullptr,
                   bias.defined() ? &b_shape : nullptr, eps);

  // x is [rows, n]: the leading axes flattened, then the normalized ones.
  const std::size_t lead = x_shape.size() - normalized_shape.size();
  std::size_t rows = 1, n = 1;
  for (std::size_t d = 0; d < lead; ++d) rows *= x_shape[d];
  for (std::size_t d = lead; d < x_shape.size(); ++d) n *= x_shape[d];
  const T* w = weight.defined() ? weight.value().data() : nullptr;
  const T* b = bias.defined() ? bias.value().data() : nullptr;
  auto y = xt::xarray<T>::from_shape(x_shape);
  RowMoments<T> stats = layer_norm_forward(x.value().data(), y.data(), rows, n, w, b, static_cast<T>(eps));

  return make_result("layer_norm", where, std::move(y), should_record(x, weight, bias),
                     [x, weight, bias = detail::edge(bias), normalized_shape, stats = std::move(stats), eps](const Tensor<T>& g) {
                       const bool want_x = x.requires_grad();
                       const bool want_w = weight.defined() && weight.requires_grad();
                       const bool want_b = bias.requires_grad();
                       LayerNormGrads<T> grads = layer_norm_backward(g, x, weight, normalized_shape, stats, eps,
                                                                     want_x, want_w, want_b);
                       if (want_x) accumulate(x, std::move(grads.dx));
                       if (want_w) accumulate(weight, std::move(grads.dw));
                       if (want_b) accumulate(bias, std::move(grads.db));
                     });
}

void check_layer_norm_eps(double eps, std::string_view who) {
  if (!(eps > 0.0) || !std::isfinite(eps)) {
    throw ValueError(std::string(who) + ": eps must be finite and > 0, got " + format_number(eps));
  }
}

#define TAPEGRAD_INSTANTIATE_NORMALIZATION(T) \
  template Tensor<T> layer_norm(const Tensor<T>&, const Shape&, const Tensor<T>&, const Tensor<T>&, double, CallSite);
TAPEGRAD_INSTANTIATE_NORMALIZATION(float)
TAPEGRAD_INSTANTIATE_NORMALIZATION(double)

}  // namespace tapegrad
