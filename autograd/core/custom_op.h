#pragma once
// Writing your own differentiable op, the way tapegrad's own ops are written:
//
//   template <class T>
//   Tensor<T> cube(const Tensor<T>& x) {
//     xt::xarray<T> y = x.value() * x.value() * x.value();
//     return custom_op("cube", std::move(y),
//                      [x](const Tensor<T>& grad, const Tensor<T>& /*result*/) {
//                        add_gradient(x, mul(mul(grad, mul(x, x)), T(3)));
//                      },
//                      x);
//   }
//
// The backward formula gets the gradient of the result and, if it takes a second parameter, the
// result itself (which is then kept for backward; a formula of the gradient alone lets the
// result's value go with the caller's last handle), and adds the vector-Jacobian product of each
// input into it with add_gradient, computed with tapegrad's ops. An input it captures is kept
// whole, value included, until the tape releases the formula:
// a first-order backward runs it unrecorded, and GradientOptions::create_graph records it, so it
// can be differentiated again. A backward on plain arrays,
// [x](const xt::xarray<T>& grad, const xt::xarray<T>& result) { add_gradient(x, array); },
// also works for first order; a create_graph walk reaching it throws TapeError naming the op.
// Check it with gradcheck and gradgradcheck (autograd/testing/gradcheck.h) in float64.
#include "autograd/base/source_location.h"
#include <utility>

#include "autograd/core/record.h"

namespace tapegrad {

// A custom op's name and the place custom_op was called from (for anomaly reports). A parameter
// pack cannot be followed by a defaulted std::source_location, so the call site is captured by
// this implicit conversion from the name instead: its default argument is evaluated at the call.
struct CustomOpName {
  CustomOpName(const char* name, std::source_location where = std::source_location::current())
      : name(name), where(where) {}
  const char* name;
  std::source_location where;
};

// Records `name` on the active tapes when any of `inputs` requires a gradient, and returns the
// result tensor holding `value`. In anomaly mode, a NaN or a new infinity in `value` throws
// AnomalyError, and so does one in a gradient `backward` adds (autograd/core/anomaly.h).
template <class T, class Backward, class... Inputs>
Tensor<T> custom_op(CustomOpName name, xt::xarray<T> value, Backward&& backward, const Inputs&... inputs) {
  return detail::make_result(name.name, name.where, std::move(value), detail::should_record(inputs...),
                             std::forward<Backward>(backward));
}

// Adds g into x's gradient when x requires one (g must have x's shape).
template <class T>
void add_gradient(const Tensor<T>& x, xt::xarray<T> g) {
  if (x.defined() && x.requires_grad()) detail::accumulate(x, std::move(g));
}
template <class T>
void add_gradient(const Tensor<T>& x, Tensor<T> g) {
  if (x.defined() && x.requires_grad()) detail::accumulate(x, std::move(g));
}

}  // namespace tapegrad
