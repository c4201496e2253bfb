#include "autograd/ops/operators.h"

#include <xtensor/xmath.hpp>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"

namespace tapegrad {

template <class To, class From>
Tensor<To> cast(const Tensor<From>& a, CallSite where) {
  require_defined(a, "cast", "a");
  return detail::make_result("cast", where, xt::xarray<To>(xt::cast<To>(a.value())), detail::should_record(a),
                             [a = detail::edge(a)](const Tensor<To>& g) { detail::accumulate(a, cast<From>(g)); });
}

template <class T>
template <class U>
Tensor<U> Tensor<T>::to(CallSite where) const {
  return cast<U>(*this, where);
}

template Tensor<double> cast<double, float>(const Tensor<float>&, CallSite);
template Tensor<float> cast<float, double>(const Tensor<double>&, CallSite);
template Tensor<float> cast<float, float>(const Tensor<float>&, CallSite);
template Tensor<double> cast<double, double>(const Tensor<double>&, CallSite);
template Tensor<double> Tensor<float>::to<double>(CallSite) const;
template Tensor<float> Tensor<double>::to<float>(CallSite) const;
template Tensor<float> Tensor<float>::to<float>(CallSite) const;
template Tensor<double> Tensor<double>::to<double>(CallSite) const;

}  // namespace tapegrad
