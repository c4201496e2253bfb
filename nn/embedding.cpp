#include "nn/embedding.h"

#include <xtensor/xview.hpp>

#include "autograd/ops/embedding.h"
#include "nn/init.h"

namespace tapegrad::nn {

template <class T>
Embedding<T>::Embedding(std::size_t num_embeddings, std::size_t embedding_dim, Generator& gen,
                        std::optional<Index> padding_idx) {
  const auto num = static_cast<Index>(num_embeddings);
  if (padding_idx && (*padding_idx < -num || *padding_idx >= num)) {
    throw ValueError("Embedding: padding_idx " + std::to_string(*padding_idx) + " is out of range for " +
                     std::to_string(num_embeddings) + " embeddings");
  }
  if (padding_idx) padding_idx_ = *padding_idx < 0 ? *padding_idx + num : *padding_idx;
  this->register_parameter("weight", weight_, Tensor<T>::zeros({num_embeddings, embedding_dim}));
  init::normal_(weight_, 0.0, 1.0, gen);
  if (padding_idx_) xt::view(weight_.mutable_value(), *padding_idx_, xt::all()) = T(0);
}

template <class T>
Tensor<T> Embedding<T>::forward(const IndexArray& indices) {
  return embedding(weight_, indices, padding_idx_);
}

template class Embedding<float>;
template class Embedding<double>;

}  // namespace tapegrad::nn
