#pragma once
// The pointwise unary ops of autograd/ops/pointwise_table.h, whose row gives each one's formula,
// derivative and domain:
//   neg, exp, expm1, log, log1p, sqrt, rsqrt, reciprocal, sin, cos, abs, sign.
// Each is declared as
//   template <class T> Tensor<T> name(const Tensor<T>& a, CallSite where = current call site);
// and gives an output of a's shape. Out of its domain an op gives what IEEE arithmetic gives
// (log(-1) is NaN, reciprocal(0) is inf), as PyTorch; anomaly mode reports it.
#include "autograd/ops/pointwise_table.h"
#include "autograd/source_location.h"
#include "autograd/tensor.h"

namespace tapegrad {

#define TAPEGRAD_DECLARE_UNARY(name, forward, reference, derivative, domain) \
  template <class T> Tensor<T> name(const Tensor<T>& a, CallSite where = std::source_location::current());
TAPEGRAD_UNARY_OPS(TAPEGRAD_DECLARE_UNARY)
#undef TAPEGRAD_DECLARE_UNARY

}  // namespace tapegrad
