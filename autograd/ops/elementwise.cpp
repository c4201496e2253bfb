#include "autograd/ops/elementwise.h"

#include <xtensor/xmath.hpp>

#include "autograd/detail/checks.h"
#include "autograd/detail/record.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

}  // namespace

template <class T>
Tensor<T> add(const Tensor<T>& a, Scalar<T> s, CallSite where) {
  detail::require_defined(a, "add", "a");
  return make_result("add_scalar", where, xt::xarray<T>(a.value() + s), should_record(a),
                     [a](const Tensor<T>& g, const Tensor<T>&) { accumulate(a, g); });
}

template <class T>
Tensor<T> mul(const Tensor<T>& a, Scalar<T> s, CallSite where) {
  detail::require_defined(a, "mul", "a");
  return make_result("mul_scalar", where, xt::xarray<T>(a.value() * s), should_record(a),
                     [a, s](const Tensor<T>& g, const Tensor<T>&) { accumulate(a, mul(g, s)); });
}

template <class T>
Tensor<T> rsub(const Tensor<T>& a, Scalar<T> s, CallSite where) {
  detail::require_defined(a, "rsub", "a");
  return make_result("rsub_scalar", where, xt::xarray<T>(s - a.value()), should_record(a),
                     [a](const Tensor<T>& g, const Tensor<T>&) { accumulate(a, neg(g)); });
}

template <class T>
Tensor<T> rdiv(const Tensor<T>& a, Scalar<T> s, CallSite where) {
  detail::require_defined(a, "rdiv", "a");
  // d(s/a)/da = -s/a^2 = -y/a
  return make_result("rdiv_scalar", where, xt::xarray<T>(s / a.value()), should_record(a),
                     [a](const Tensor<T>& g, const Tensor<T>& y) { accumulate(a, div(mul(neg(g), y), a)); });
}

template <class T>
Tensor<T> pow(const Tensor<T>& a, Scalar<T> exponent, CallSite where) {
  detail::require_defined(a, "pow", "a");
  return make_result("pow_scalar", where, xt::xarray<T>(xt::pow(a.value(), exponent)), should_record(a),
                     [a, exponent](const Tensor<T>& g, const Tensor<T>&) {
                       accumulate(a, mul(mul(g, exponent), pow(a, exponent - T(1))));
                     });
}

template <class To, class From>
Tensor<To> cast(const Tensor<From>& a, CallSite where) {
  detail::require_defined(a, "cast", "a");
  return make_result("cast", where, xt::xarray<To>(xt::cast<To>(a.value())), should_record(a),
                     [a](const Tensor<To>& g, const Tensor<To>&) { accumulate(a, cast<From>(g)); });
}

template <class T>
template <class U>
Tensor<U> Tensor<T>::to(CallSite where) const {
  return cast<U>(*this, where);
}

#define TAPEGRAD_INSTANTIATE_ELEMENTWISE(T)                          \
  template Tensor<T> add(const Tensor<T>&, Scalar<T>, CallSite);               \
  template Tensor<T> mul(const Tensor<T>&, Scalar<T>, CallSite);               \
  template Tensor<T> rsub(const Tensor<T>&, Scalar<T>, CallSite);              \
  template Tensor<T> rdiv(const Tensor<T>&, Scalar<T>, CallSite);              \
  template Tensor<T> pow(const Tensor<T>&, Scalar<T>, CallSite);
TAPEGRAD_INSTANTIATE_ELEMENTWISE(float)
TAPEGRAD_INSTANTIATE_ELEMENTWISE(double)

template Tensor<double> cast<double, float>(const Tensor<float>&, CallSite);
template Tensor<float> cast<float, double>(const Tensor<double>&, CallSite);
template Tensor<float> cast<float, float>(const Tensor<float>&, CallSite);
template Tensor<double> cast<double, double>(const Tensor<double>&, CallSite);
template Tensor<double> Tensor<float>::to<double>(CallSite) const;
template Tensor<float> Tensor<double>::to<float>(CallSite) const;
template Tensor<float> Tensor<float>::to<float>(CallSite) const;
template Tensor<double> Tensor<double>::to<double>(CallSite) const;

}  // namespace tapegrad
