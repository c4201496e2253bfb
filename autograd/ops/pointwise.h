#pragma once
// The pointwise ops: one for each row of autograd/ops/pointwise_table.h, which gives its formula,
// derivative and domain (docs/ops.md lists them).
//   Unary:  template <class T> Tensor<T> name(const Tensor<T>& a, CallSite where = current call site)
//           gives an output of a's shape.
//   Binary: template <class T> Tensor<T> name(const Tensor<T>& a, const Tensor<T>& b, CallSite where = ...)
//           broadcasts a and b (ShapeError naming both shapes when they do not) and sums each
//           input's gradient back to its shape.
//   With a scalar (add, mul, rsub: s - a, rdiv: s / a, pow: a^s, rpow: s^a):
//           template <class T> Tensor<T> name(const Tensor<T>& a, Scalar<T> s, CallSite where = ...)
//           gives an output of a's shape (Scalar<T> is T, not deduced, so `mul(x, 2.0)` works
//           for float).
// Out of its domain an op gives what IEEE arithmetic gives (log(-1) is NaN, reciprocal(0) is inf),
// as PyTorch; anomaly mode reports it.
#include <type_traits>

#include "autograd/ops/pointwise_table.h"
#include "autograd/base/source_location.h"
#include "autograd/core/tensor.h"

namespace tapegrad {

#define TAPEGRAD_DECLARE_UNARY(name, forward, reference, derivative, domain) \
  template <class T> Tensor<T> name(const Tensor<T>& a, CallSite where = std::source_location::current());
TAPEGRAD_UNARY_OPS(TAPEGRAD_DECLARE_UNARY)
#undef TAPEGRAD_DECLARE_UNARY

#define TAPEGRAD_DECLARE_BINARY(name, forward, reference, derivative_a, derivative_b, domain_a, domain_b) \
  template <class T> Tensor<T> name(const Tensor<T>& a, const Tensor<T>& b,                              \
                                    CallSite where = std::source_location::current());
TAPEGRAD_BINARY_OPS(TAPEGRAD_DECLARE_BINARY)
#undef TAPEGRAD_DECLARE_BINARY

#define TAPEGRAD_DECLARE_SCALAR(name, recorded_name, forward, reference, derivative, domain, scalars)   \
  template <class T> Tensor<T> name(const Tensor<T>& a, Scalar<T> s,                                    \
                                    CallSite where = std::source_location::current());
TAPEGRAD_SCALAR_OPS(TAPEGRAD_DECLARE_SCALAR)
#undef TAPEGRAD_DECLARE_SCALAR

}  // namespace tapegrad
