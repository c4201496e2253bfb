#pragma once
// LayerNorm(normalized_shape, eps = 1e-5, elementwise_affine = true): normalises over the last
// normalized_shape.size() axes, then scales by weight (ones) and shifts by bias (zeros), both of
// shape normalized_shape, as torch.nn.LayerNorm.
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
};

extern template class LayerNorm<float>;
extern template class LayerNorm<double>;

}  // namespace tapegrad::nn
