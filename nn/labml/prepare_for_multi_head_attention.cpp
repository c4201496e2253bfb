#include "nn/labml/prepare_for_multi_head_attention.h"

#include <vector>

#include "autograd/ops/shape.h"

namespace tapegrad::nn::labml {

template <class T>
PrepareForMultiHeadAttention<T>::PrepareForMultiHeadAttention(std::size_t d_model, std::size_t heads, std::size_t d_k,
                                                              Generator& gen, bool bias)
    : d_model_(d_model), heads_(heads), d_k_(d_k) {
  if (d_model == 0 || heads == 0 || d_k == 0) {
    throw ValueError("PrepareForMultiHeadAttention: d_model, heads and d_k must be positive, got d_model=" +
                     std::to_string(d_model) + ", heads=" + std::to_string(heads) + ", d_k=" + std::to_string(d_k));
  }
  linear_ = this->register_module("linear", std::make_shared<Linear<T>>(d_model, heads * d_k, gen, bias));
}

template <class T>
Tensor<T> PrepareForMultiHeadAttention<T>::forward(const Tensor<T>& x) {
  if (x.ndim() == 0 || x.size(-1) != d_model_) {
    throw ShapeError("PrepareForMultiHeadAttention(d_model=" + std::to_string(d_model_) + ", heads=" +
                     std::to_string(heads_) + ", d_k=" + std::to_string(d_k_) + "): input " + x.describe() +
                     " must be [..., " + std::to_string(d_model_) + "]");
  }
  // head_shape = x.shape[:-1], then the projection is viewed as [*head_shape, heads, d_k].
  const Shape shape = x.shape();
  std::vector<Index> split(shape.begin(), shape.end() - 1);
  split.push_back(static_cast<Index>(heads_));
  split.push_back(static_cast<Index>(d_k_));
  return view((*linear_)(x), split);
}

template class PrepareForMultiHeadAttention<float>;
template class PrepareForMultiHeadAttention<double>;

}  // namespace tapegrad::nn::labml
