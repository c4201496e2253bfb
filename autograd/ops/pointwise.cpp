#include "autograd/ops/pointwise.h"

#include <cmath>

#include "autograd/detail/checks.h"
#include "autograd/detail/record.h"
#include "autograd/kernels/map.h"
#include "autograd/ops/elementwise.h"

namespace tapegrad {

namespace {

// One row of the table: y = forward(x) by the map kernel; backward accumulates derivative(g, x, y).
template <class T, class Forward, class Derivative>
Tensor<T> unary_op(const char* op, const Tensor<T>& a, CallSite where, Forward forward, Derivative derivative) {
  detail::require_defined(a, op, "a");
  xt::xarray<T> y = xt::xarray<T>::from_shape(a.value().shape());
  kernels::map(y.size(), a.value().data(), y.data(), forward);
  return detail::make_result(op, where, std::move(y), detail::should_record(a),
                             [a, derivative](const Tensor<T>& g, const Tensor<T>& out) {
                               detail::accumulate(a, derivative(g, a, out));
                             });
}

}  // namespace

#define TAPEGRAD_DEFINE_UNARY(name, forward, reference, derivative, domain)                             \
  template <class T>                                                                                    \
  Tensor<T> name(const Tensor<T>& a, CallSite where) {                                                  \
    return unary_op(#name, a, where, [](auto x) { return forward; },                                     \
                    [](const Tensor<T>& g, [[maybe_unused]] const Tensor<T>& x,                          \
                       [[maybe_unused]] const Tensor<T>& y) { return derivative; });                     \
  }
TAPEGRAD_UNARY_OPS(TAPEGRAD_DEFINE_UNARY)
#undef TAPEGRAD_DEFINE_UNARY

#define TAPEGRAD_INSTANTIATE_UNARY(name, forward, reference, derivative, domain) \
  template Tensor<float> name(const Tensor<float>&, CallSite);                   \
  template Tensor<double> name(const Tensor<double>&, CallSite);
TAPEGRAD_UNARY_OPS(TAPEGRAD_INSTANTIATE_UNARY)
#undef TAPEGRAD_INSTANTIATE_UNARY

}  // namespace tapegrad
