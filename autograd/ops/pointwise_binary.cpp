// The binary rows of the pointwise table (the others are in pointwise_unary.cpp).
#include "autograd/ops/pointwise.h"

#include "autograd/ops/detail/pointwise_rows.h"

namespace tapegrad {

TAPEGRAD_BINARY_OPS(TAPEGRAD_DEFINE_BINARY)

#define TAPEGRAD_INSTANTIATE_BINARY(name, forward, reference, derivative_a, derivative_b, domain_a, domain_b) \
  template Tensor<float> name(const Tensor<float>&, const Tensor<float>&, CallSite);                          \
  template Tensor<double> name(const Tensor<double>&, const Tensor<double>&, CallSite);
TAPEGRAD_BINARY_OPS(TAPEGRAD_INSTANTIATE_BINARY)
#undef TAPEGRAD_INSTANTIATE_BINARY

}  // namespace tapegrad
