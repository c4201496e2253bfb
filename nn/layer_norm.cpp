#include "nn/layer_norm.h"

#include "autograd/ops/normalization.h"

namespace tapegrad::nn {

template <class T>
LayerNorm<T>::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  // Checked here too, so a bad configuration fails where it is written rather than at the first forward.
  if (normalized_shape_.empty())
    throw ShapeError("LayerNorm: normalized_shape [] is empty; it must name at least one axis");
  check_layer_norm_eps(eps, "LayerNorm" + format_shape(normalized_shape_));  // the op's rule
  if (elementwise_affine) {
    this->register_parameter("weight", weight_, Tensor<T>::ones(normalized_shape_));
    this->register_parameter("bias", bias_, Tensor<T>::zeros(normalized_shape_));
  }
}

template <class T>
Tensor<T> LayerNorm<T>::forward(const Tensor<T>& x) {
  return layer_norm(x, normalized_shape_, weight_, bias_, eps_);
}

template class LayerNorm<float>;
template class LayerNorm<double>;

}  // namespace tapegrad::nn
