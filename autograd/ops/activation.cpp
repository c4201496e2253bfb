#include "autograd/ops/activation.h"

#include <cmath>
#include <concepts>
#include <memory>
#include <numbers>
#include <optional>

#include <xtensor/xoperation.hpp>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/simd/map.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/masking.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// out[i] = f(x[i]) (f on one T).
template <class T, class F>
xt::xarray<T> map_elements(const xt::xarray<T>& x, F f) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(x.shape());
  kernels::map(x.size(), x.data(), out.data(), f);
  return out;
}

// out[i] = g[i] * f(v[i]): every backward here is the incoming gradient times a local derivative
// that depends on one saved value per element (the input or the output). In a first-order walk
// the formula calling this passed on the only handle of the gradient, and nothing reads it
// afterwards: the result is written over g's array (the same arithmetic, one gradient-sized
// array less alive: a [tokens, d_ff] one at the start of a Transformer's backward, its memory
// peak). A recorded backward (create_graph) keeps g for its own formula. An f that takes xsimd
// batches as well as T runs on whole batches (kernels/simd/map.h); a scalar-only f, element by element.
template <class T, class F>
xt::xarray<T> scale_by(Tensor<T>& g, const xt::xarray<T>& v, const detail::Recording& recording, F f) {
  std::optional<xt::xarray<T>> own = recording.record ? std::nullopt : detail::take_value_if_sole_reader(g);
  xt::xarray<T> out = own ? std::move(*own) : xt::xarray<T>::from_shape(g.shape());
  const T* g_data = own ? out.data() : g.value().data();
  kernels::map(out.size(), g_data, v.data(), out.data(),
               [f]<class V>(V gi, V vi) requires std::invocable<const F&, V> { return gi * f(vi); });
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

// The backward of each activation is an op of its own, g * f'(v) with v the saved output (or
// gelu's input): its value is scale_by's one fused pass, and its formula, the second derivative,
// is written with differentiable ops. Each is linear in g, so d/dg is the op itself again.

// relu' is a step: the gradient passes where y > 0 or y is NaN (PyTorch 1.13's threshold_backward
// keeps it where !(x <= 0)), and is 0 at x == 0. Its derivative in y is 0, so y gets none. A
// select, not a branch: taken or not at random, a branch was mispredicted at half the elements,
// which showed in the tiny copy-task step's profile (bench/RESULTS.md, "relu without branches").
template <class T>
Tensor<T> relu_backward(Tensor<T> g, const Tensor<T>& y, CallSite where = std::source_location::current()) {
  const auto step = [](auto v) {
    using V = decltype(v);
    return kernels::simd::select(v <= V(0), V(0), V(1));
  };
  detail::Recording recording = should_record(g, y);
  xt::xarray<T> dx = scale_by(g, y.value(), recording, step);
  return make_result("relu_backward", where, std::move(dx), std::move(recording),
                     [g, y](const Tensor<T>& gg) {
                       if (g.requires_grad()) accumulate(g, relu_backward(gg, y));
                     });
}

// g y (1 - y); d/dy = g (1 - 2y).
template <class T>
Tensor<T> sigmoid_backward(Tensor<T> g, const Tensor<T>& y, CallSite where = std::source_location::current()) {
  detail::Recording recording = should_record(g, y);
  xt::xarray<T> dx = scale_by(g, y.value(), recording, [](T v) { return v * (T(1) - v); });
  return make_result("sigmoid_backward", where, std::move(dx), std::move(recording), [g, y](const Tensor<T>& gg) {
                       if (g.requires_grad()) accumulate(g, sigmoid_backward(gg, y));
                       if (y.requires_grad()) accumulate(y, mul(mul(gg, g), rsub(mul(y, T(2)), T(1))));
                     });
}

// g (1 - y^2); d/dy = -2 g y.
template <class T>
Tensor<T> tanh_backward(Tensor<T> g, const Tensor<T>& y, CallSite where = std::source_location::current()) {
  detail::Recording recording = should_record(g, y);
  xt::xarray<T> dx = scale_by(g, y.value(), recording, [](T v) { return T(1) - v * v; });
  return make_result("tanh_backward", where, std::move(dx), std::move(recording), [g, y](const Tensor<T>& gg) {
                       if (g.requires_grad()) accumulate(g, tanh_backward(gg, y));
                       if (y.requires_grad()) accumulate(y, mul(mul(gg, g), mul(y, T(-2))));
                     });
}

// gelu''(x), with tapegrad's ops (a third derivative differentiates it again).
//   Exact: d/dx (Phi + x phi) = 2 phi + x phi' = phi(x) (2 - x^2).
//   Tanh:  with u' = sqrt(2/pi) (1 + 3 c x^2) and u'' = 6 sqrt(2/pi) c x, differentiating
//          (1 + t) / 2 + x (1 - t^2) u' / 2 gives (1 - t^2) (u' + x u'' / 2 - x t u'^2).
template <class T>
Tensor<T> gelu_second_derivative(const Tensor<T>& x, bool use_tanh) {
  const Tensor<T> x2 = mul(x, x);
  if (!use_tanh) return mul(mul(exp(mul(x2, T(-0.5))), kInvSqrt2Pi<T>), rsub(x2, T(2)));
  const Tensor<T> t = tanh(mul(add(x, mul(mul(x2, x), kGeluCubic<T>)), kSqrt2OverPi<T>));
  const Tensor<T> du = mul(add(mul(x2, T(3) * kGeluCubic<T>), T(1)), kSqrt2OverPi<T>);
  const Tensor<T> half_x_ddu = mul(x2, T(3) * kSqrt2OverPi<T> * kGeluCubic<T>);
  return mul(rsub(mul(t, t), T(1)), sub(add(du, half_x_ddu), mul(mul(x, t), mul(du, du))));
}

// g gelu'(x); d/dx = g gelu''(x).
template <class T>
Tensor<T> gelu_backward(Tensor<T> g, const Tensor<T>& x, bool use_tanh,
                        CallSite where = std::source_location::current()) {
  detail::Recording recording = should_record(g, x);
  xt::xarray<T> dx = use_tanh ? scale_by(g, x.value(), recording, gelu_tanh_grad<T>)
                              : scale_by(g, x.value(), recording, gelu_erf_grad<T>);
  return make_result("gelu_backward", where, std::move(dx), std::move(recording),
                     [g, x, use_tanh](const Tensor<T>& gg) {
                       if (g.requires_grad()) accumulate(g, gelu_backward(gg, x, use_tanh));
                       if (x.requires_grad()) accumulate(x, mul(mul(gg, g), gelu_second_derivative(x, use_tanh)));
                     });
}

}  // namespace

template <class T>
Tensor<T> relu(const Tensor<T>& a, CallSite where) {
  require_defined(a, "relu", "a");
  // NaN passes through (as PyTorch) so anomaly mode still sees it. y > 0 exactly where x > 0 and
  // y is NaN exactly where x is, so the output is all the backward needs. -0 gives +0.
  const auto forward = [](auto x) {
    using V = decltype(x);
    return kernels::simd::select(x <= V(0), V(0), x);
  };
  return make_result("relu", where, map_elements(a.value(), forward), should_record(a),
                     [a = detail::edge(a)](Tensor<T> g, const Tensor<T>& y) { accumulate(a, relu_backward(std::move(g), y)); });
}

template <class T>
Tensor<T> sigmoid(const Tensor<T>& a, CallSite where) {
  require_defined(a, "sigmoid", "a");
  // exp of a non-positive argument only, so no overflow for large |x|.
  const auto forward = [](T x) {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  };
  return make_result("sigmoid", where, map_elements(a.value(), forward), should_record(a),
                     [a = detail::edge(a)](Tensor<T> g, const Tensor<T>& y) { accumulate(a, sigmoid_backward(std::move(g), y)); });
}

template <class T>
Tensor<T> tanh(const Tensor<T>& a, CallSite where) {
  require_defined(a, "tanh", "a");
  return make_result("tanh", where, map_elements(a.value(), [](T x) { return std::tanh(x); }), should_record(a),
                     [a = detail::edge(a)](Tensor<T> g, const Tensor<T>& y) { accumulate(a, tanh_backward(std::move(g), y)); });
}

template <class T>
Tensor<T> gelu(const Tensor<T>& a, GeluApproximation approximate, CallSite where) {
  require_defined(a, "gelu", "a");
  const bool use_tanh = approximate == GeluApproximation::Tanh;
  xt::xarray<T> y = use_tanh ? map_elements(a.value(), gelu_tanh<T>) : map_elements(a.value(), gelu_erf<T>);
  // The derivative needs x, which the handle `a` already holds.
  return make_result("gelu", where, std::move(y), should_record(a),
                     [a, use_tanh](Tensor<T> g) {
                       accumulate(a, gelu_backward(std::move(g), a, use_tanh));
                     });
}

template <class T>
Tensor<T> softplus(const Tensor<T>& a, double beta, double threshold, CallSite where) {
  require_defined(a, "softplus", "a");
  if (beta == 0.0 || !std::isfinite(beta) || std::isnan(threshold)) {
    throw ValueError("softplus: beta must be finite and nonzero and threshold not nan, got beta = " +
                     format_number(beta) + ", threshold = " + format_number(threshold) + " (input " +
                     format_shape(a.shape()) + ")");
  }
  const T b = static_cast<T>(beta), limit = static_cast<T>(threshold);
  // PyTorch's formula, so values agree to the last bits: log1p(exp(b x)) / b.
  const auto forward = [b, limit](T x) { return x * b > limit ? x : std::log1p(std::exp(x * b)) / b; };
  auto linear = std::make_shared<const Mask>(xt::greater(a.value() * b, limit));
  // d/dx = sigmoid(b x), filled with 1 over the linear region (masked_fill passes no gradient
  // there, so the second derivative is 0 as it should be).
  return make_result("softplus", where, map_elements(a.value(), forward), should_record(a),
                     [a, b, linear](const Tensor<T>& g) {
                       accumulate(a, mul(g, masked_fill(sigmoid(mul(a, b)), *linear, T(1))));
                     });
}

#define TAPEGRAD_INSTANTIATE_ACTIVATION(T)      \
  template Tensor<T> relu(const Tensor<T>&, CallSite);    \
  template Tensor<T> sigmoid(const Tensor<T>&, CallSite); \
  template Tensor<T> tanh(const Tensor<T>&, CallSite);    \
  template Tensor<T> gelu(const Tensor<T>&, GeluApproximation, CallSite); \
  template Tensor<T> softplus(const Tensor<T>&, double, double, CallSite);
TAPEGRAD_INSTANTIATE_ACTIVATION(float)
TAPEGRAD_INSTANTIATE_ACTIVATION(double)

}  // namespace tapegrad
