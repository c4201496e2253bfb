#pragma once
// LayerNorm(normalized_shape, eps = 1e-5, elementwise_affine = true): normalises over the last
// normalized_shape.size() axes, then scales by weight (ones) and shifts by bias (zeros), both of
// shape normalized_shape, as torch.nn.LayerNorm.
//
// Hook point hook_scale (nn/hook_point.h): 1 / sqrt(var + eps) of each normalised group (var
// biased), shaped as the input with the normalised axes of size 1 (TransformerLens's hook_scale,
// [batch, seq, 1]). While it is hooked, forward computes (x - mean) * scale * weight + bias with
// separate ops, equal to the fused layer_norm up to rounding.
#include "nn/unary_module.h"

namespace tapegrad::nn {

template <class T>
class LayerNorm : public UnaryModule<T> {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  explicit LayerNorm(std::size_t normalized_size, double eps = 1e-5, bool elementwise_affine = true)
      : LayerNorm(Shape{normalized_size}, eps, elementwise_affine) {}

  std::string type_name() const override { return "LayerNorm"; }
  Tensor<T> forward(const Tensor<T>& x) override;

  const Tensor<T>& weight() const { return weight_; }
  const Tensor<T>& bias() const { return bias_; }
  double eps() const { return eps_; }

 private:
  Shape normalized_shape_;
  double eps_;
  Tensor<T> weight_, bias_;
  HookPoint<T> hook_scale_;
};

extern template class LayerNorm<float>;
extern template class LayerNorm<double>;

}  // namespace tapegrad::nn
