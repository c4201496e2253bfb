#include "nn/layer_norm.h"

#include "autograd/ops/normalization.h"

namespace tapegrad::nn {

template <class T>
LayerNorm<T>::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  if (elementwise_affine) {
    weight_ = this->register_parameter("weight", Tensor<T>::ones(normalized_shape_));
    bias_ = this->register_parameter("bias", Tensor<T>::zeros(normalized_shape_));
  }
}

template <class T>
Tensor<T> LayerNorm<T>::forward(const Tensor<T>& x) {
  return layer_norm(x, normalized_shape_, weight_, bias_, eps_);
}

template class LayerNorm<float>;
template class LayerNorm<double>;

}  // namespace tapegrad::nn
