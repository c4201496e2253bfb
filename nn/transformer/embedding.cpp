#include "nn/transformer/embedding.h"

namespace tapegrad::nn::transformer {

template <class T>
Embedding<T>::Embedding(std::size_t vocab_size, std::size_t d_model, Index pad_idx, Generator& gen)
    : embedding_layer_(this->register_module("embedding_layer",
                                             std::make_shared<nn::Embedding<T>>(vocab_size, d_model, gen, pad_idx))) {}

template <class T>
Tensor<T> Embedding<T>::forward(const IndexArray& tokens) {
  if (tokens.dimension() != 2) {
    throw ShapeError("Embedding: tokens must be [batch, seq], got " + format_shape(tokens.shape()));
  }
  return (*embedding_layer_)(tokens);
}

template class Embedding<float>;
template class Embedding<double>;

}  // namespace tapegrad::nn::transformer
