#pragma once
// labml.ai's PrepareForMultiHeadAttention(d_model, heads, d_k, bias): one Linear
// d_model -> heads * d_k, then the last axis is split into heads:
//   x [..., d_model] -> linear -> [..., heads * d_k] -> view -> [..., heads, d_k]
// Any number of leading axes: [seq_len, batch_size, d_model] -> [seq_len, batch_size, heads, d_k],
// [batch_size, d_model] -> [batch_size, heads, d_k]. The only child is `linear`, so parameters are
// named linear.weight [heads * d_k, d_model] and linear.bias [heads * d_k] as in PyTorch.
#include <memory>

#include "nn/linear.h"
#include "nn/unary_module.h"

namespace tapegrad::nn::labml {

template <class T>
class PrepareForMultiHeadAttention : public UnaryModule<T> {
 public:
  PrepareForMultiHeadAttention(std::size_t d_model, std::size_t heads, std::size_t d_k, Generator& gen, bool bias);

  std::string type_name() const override { return "PrepareForMultiHeadAttention"; }
  // x [..., d_model] -> [..., heads, d_k]; ShapeError unless x has at least one axis and ends in d_model.
  Tensor<T> forward(const Tensor<T>& x) override;

  const Linear<T>& linear() const { return *linear_; }
  std::size_t heads() const { return heads_; }
  std::size_t d_k() const { return d_k_; }

 private:
  std::size_t d_model_, heads_, d_k_;
  std::shared_ptr<Linear<T>> linear_;
};

extern template class PrepareForMultiHeadAttention<float>;
extern template class PrepareForMultiHeadAttention<double>;

}  // namespace tapegrad::nn::labml
