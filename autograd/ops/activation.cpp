#include "autograd/ops/activation.h"

#include <cmath>
#include <numbers>

#include "autograd/detail/checks.h"
#include "autograd/detail/record.h"
#include "autograd/kernels/row_kernels.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// out[i] = f(x[i]), in parallel blocks over the flat storage.
template <class T, class F>
xt::xarray<T> map_elements(const xt::xarray<T>& x, F f) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(x.shape());
  const T* xv = x.data();
  T* ov = out.data();
  kernels::parallel_items(x.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) ov[i] = f(xv[i]);
  });
  return out;
}

// out[i] = g[i] * f(v[i]): every backward here is the incoming gradient times a local derivative
// that depends on one saved value per element (the input or the output).
template <class T, class F>
xt::xarray<T> scale_by(const xt::xarray<T>& g, const xt::xarray<T>& v, F f) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(g.shape());
  const T* gv = g.data();
  const T* vv = v.data();
  T* ov = out.data();
  kernels::parallel_items(g.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) ov[i] = gv[i] * f(vv[i]);
  });
  return out;
}

// GELU constants (PyTorch's): 1/sqrt(2), 1/sqrt(2 pi), sqrt(2/pi) and the cubic coefficient of
// the tanh approximation.
template <class T> constexpr T kInvSqrt2 = T(1) / std::numbers::sqrt2_v<T>;
template <class T> constexpr T kInvSqrt2Pi = std::numbers::inv_sqrtpi_v<T> / std::numbers::sqrt2_v<T>;
template <class T> constexpr T kSqrt2OverPi = std::numbers::sqrt2_v<T> * std::numbers::inv_sqrtpi_v<T>;
template <class T> constexpr T kGeluCubic = T(0.044715);

// Exact: y = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2;  dy/dx = Phi(x) + x phi(x),
// phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
template <class T> T gelu_erf(T x) { return T(0.5) * x * (T(1) + std::erf(x * kInvSqrt2<T>)); }
template <class T> T gelu_erf_grad(T x) {
  return T(0.5) * (T(1) + std::erf(x * kInvSqrt2<T>)) + x * kInvSqrt2Pi<T> * std::exp(T(-0.5) * x * x);
}

// Tanh approximation: u = sqrt(2/pi) (x + c x^3), y = x (1 + tanh u) / 2;
// dy/dx = (1 + t) / 2 + x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2) / 2, t = tanh u.
template <class T> T gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + std::tanh(kSqrt2OverPi<T> * (x + kGeluCubic<T> * x * x * x)));
}
template <class T> T gelu_tanh_grad(T x) {
  const T t = std::tanh(kSqrt2OverPi<T> * (x + kGeluCubic<T> * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * kSqrt2OverPi<T> * (T(1) + T(3) * kGeluCubic<T> * x * x);
}

}  // namespace

template <class T>
Tensor<T> relu(const Tensor<T>& a, CallSite where) {
  detail::require_defined(a, "relu", "a");
  // NaN passes through (as PyTorch) so anomaly mode still sees it. y > 0 exactly where x > 0 and
  // y is NaN exactly where x is, so the output is all the backward needs: the gradient passes
  // where y > 0 or y is NaN (PyTorch 1.13's threshold_backward keeps it where !(x <= 0)), and is
  // 0 at x == 0.
  const auto forward = [](T x) { return x > T(0) || std::isnan(x) ? x : T(0); };
  return make_result("relu", where, map_elements(a.value(), forward), should_record(a),
                     [a](const xt::xarray<T>& g, const xt::xarray<T>& y) {
                       accumulate(a, scale_by(g, y, [](T v) { return v <= T(0) ? T(0) : T(1); }));
                     });
}

template <class T>
Tensor<T> sigmoid(const Tensor<T>& a, CallSite where) {
  detail::require_defined(a, "sigmoid", "a");
  // exp of a non-positive argument only, so no overflow for large |x|.
  const auto forward = [](T x) {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  };
  // dy/dx = y (1 - y).
  return make_result("sigmoid", where, map_elements(a.value(), forward), should_record(a),
                     [a](const xt::xarray<T>& g, const xt::xarray<T>& y) {
                       accumulate(a, scale_by(g, y, [](T v) { return v * (T(1) - v); }));
                     });
}

template <class T>
Tensor<T> tanh(const Tensor<T>& a, CallSite where) {
  detail::require_defined(a, "tanh", "a");
  // dy/dx = 1 - y^2.
  return make_result("tanh", where, map_elements(a.value(), [](T x) { return std::tanh(x); }), should_record(a),
                     [a](const xt::xarray<T>& g, const xt::xarray<T>& y) {
                       accumulate(a, scale_by(g, y, [](T v) { return T(1) - v * v; }));
                     });
}

template <class T>
Tensor<T> gelu(const Tensor<T>& a, GeluApproximation approximate, CallSite where) {
  detail::require_defined(a, "gelu", "a");
  const bool use_tanh = approximate == GeluApproximation::Tanh;
  xt::xarray<T> y = use_tanh ? map_elements(a.value(), gelu_tanh<T>) : map_elements(a.value(), gelu_erf<T>);
  // The derivative needs x, which the handle `a` already holds.
  return make_result("gelu", where, std::move(y), should_record(a), [a, use_tanh](const xt::xarray<T>& g, const xt::xarray<T>&) {
    accumulate(a, use_tanh ? scale_by(g, a.value(), gelu_tanh_grad<T>) : scale_by(g, a.value(), gelu_erf_grad<T>));
  });
}

#define TAPEGRAD_INSTANTIATE_ACTIVATION(T)      \
  template Tensor<T> relu(const Tensor<T>&, CallSite);    \
  template Tensor<T> sigmoid(const Tensor<T>&, CallSite); \
  template Tensor<T> tanh(const Tensor<T>&, CallSite);    \
  template Tensor<T> gelu(const Tensor<T>&, GeluApproximation, CallSite);
TAPEGRAD_INSTANTIATE_ACTIVATION(float)
TAPEGRAD_INSTANTIATE_ACTIVATION(double)

}  // namespace tapegrad
