#include "nn/layer_norm.h"

#include <algorithm>

#include "autograd/ops/normalization.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/pointwise.h"
#include "autograd/ops/reduce.h"

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
  this->register_hook_point("hook_scale", hook_scale_);
}

template <class T>
Tensor<T> LayerNorm<T>::forward(const Tensor<T>& x) {
  const std::size_t k = normalized_shape_.size();
  const bool normalizable = x.defined() && x.ndim() >= k &&
                            std::equal(normalized_shape_.begin(), normalized_shape_.end(), x.shape().end() - k);
  // layer_norm names a bad input in its own words, hooked or not.
  if (!hook_scale_.active() || !normalizable) return layer_norm(x, normalized_shape_, weight_, bias_, eps_);
  Axes axes;
  for (std::size_t i = 0; i < k; ++i) axes.push_back(-static_cast<Index>(i) - 1);
  const Tensor<T> centered = x - mean(x, axes, /*keepdims=*/true);
  const Tensor<T> scale = hook_scale_(rsqrt(mean(centered * centered, axes, /*keepdims=*/true) + static_cast<T>(eps_)));
  Tensor<T> y = centered * scale;
  if (weight_.defined()) y = y * weight_;
  return bias_.defined() ? y + bias_ : y;
}

template class LayerNorm<float>;
template class LayerNorm<double>;

}  // namespace tapegrad::nn
