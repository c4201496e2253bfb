// The unary and tensor-with-scalar rows of the pointwise table. The binary rows are compiled in
// pointwise_binary.cpp: the two halves of the table are the library's two largest translation
// units, and apart they build in parallel.
#include "autograd/ops/pointwise.h"

#include "autograd/ops/detail/pointwise_rows.h"

namespace tapegrad {

TAPEGRAD_UNARY_OPS(TAPEGRAD_DEFINE_UNARY)
TAPEGRAD_SCALAR_OPS(TAPEGRAD_DEFINE_SCALAR)

#define TAPEGRAD_INSTANTIATE_UNARY(name, forward, reference, derivative, domain) \
  template Tensor<float> name(const Tensor<float>&, CallSite);                   \
  template Tensor<double> name(const Tensor<double>&, CallSite);
TAPEGRAD_UNARY_OPS(TAPEGRAD_INSTANTIATE_UNARY)
#undef TAPEGRAD_INSTANTIATE_UNARY

#define TAPEGRAD_INSTANTIATE_SCALAR(name, recorded_name, forward, reference, derivative, domain, scalars) \
  template Tensor<float> name(const Tensor<float>&, Scalar<float>, CallSite);                   \
  template Tensor<double> name(const Tensor<double>&, Scalar<double>, CallSite);
TAPEGRAD_SCALAR_OPS(TAPEGRAD_INSTANTIATE_SCALAR)
#undef TAPEGRAD_INSTANTIATE_SCALAR

}  // namespace tapegrad
