#include "nn/attention_hook_points.h"

#include "autograd/ops/linalg.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"

namespace tapegrad::nn {

template <class T>
Tensor<T> head_results(const Tensor<T>& z, const Linear<T>& projection) {
  const auto heads = static_cast<Index>(z.size(1)), d_k = static_cast<Index>(z.size(3));
  const auto d_model = static_cast<Index>(projection.weight().size(0));
  return einsum("bhqd,mhd->bhqm", z, view(projection.weight(), {d_model, heads, d_k}));
}

template <class T>
Tensor<T> sum_of_head_results(const Tensor<T>& results, const Linear<T>& projection) {
  const Tensor<T> summed = sum(results, Axes{1});
  return projection.bias().defined() ? summed + projection.bias() : summed;
}

template Tensor<float> head_results(const Tensor<float>&, const Linear<float>&);
template Tensor<double> head_results(const Tensor<double>&, const Linear<double>&);
template Tensor<float> sum_of_head_results(const Tensor<float>&, const Linear<float>&);
template Tensor<double> sum_of_head_results(const Tensor<double>&, const Linear<double>&);

}  // namespace tapegrad::nn
