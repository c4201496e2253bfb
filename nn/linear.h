#pragma once
// Linear(in_features, out_features, bias): y = x W^T + b over the last axis, x [..., in] ->
// y [..., out]. weight is [out, in] as in PyTorch (so checkpoints map one to one); both are
// initialised as PyTorch does: kaiming_uniform(a = sqrt(5)) for the weight, U(-1/sqrt(in),
// 1/sqrt(in)) for the bias.
#include "nn/unary_module.h"

namespace tapegrad::nn {

template <class T>
class Linear : public UnaryModule<T> {
 public:
  Linear(std::size_t in_features, std::size_t out_features, Generator& gen, bool bias = true);

  std::string type_name() const override { return "Linear"; }
  Tensor<T> forward(const Tensor<T>& x) override;

  const Tensor<T>& weight() const { return weight_; }
  const Tensor<T>& bias() const { return bias_; }  // undefined without bias
  std::size_t in_features() const { return in_features_; }
  std::size_t out_features() const { return out_features_; }

 private:
  std::size_t in_features_, out_features_;
  Tensor<T> weight_, bias_;
};

extern template class Linear<float>;
extern template class Linear<double>;

}  // namespace tapegrad::nn
