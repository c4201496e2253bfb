#pragma once
// The reference Transformer's Embedding(vocab_size, d_model, pad_idx): token ids [batch, seq] -> [batch, seq,
// d_model] through its child embedding_layer, an nn::Embedding with padding_idx = pad_idx (N(0, 1)
// rows, the pad row zero and never updated). The wrapper exists so parameter names read
// "embedding.embedding_layer.weight", as in the PyTorch code. Like the reference code (and unlike The
// Annotated Transformer) it does not scale by sqrt(d_model).
#include <memory>

#include "nn/embedding.h"

namespace tapegrad::nn::transformer {

template <class T>
class Embedding : public Module<T> {
 public:
  Embedding(std::size_t vocab_size, std::size_t d_model, Index pad_idx, Generator& gen);

  std::string type_name() const override { return "Embedding"; }
  // tokens [batch, seq] (ShapeError otherwise: every Transformer stack is batch-first).
  Tensor<T> forward(const IndexArray& tokens);
  // forward, then the hooks (nn/module.h), which see no inputs (tokens are not tensors).
  Tensor<T> operator()(const IndexArray& tokens) { return this->run_hooks(forward(tokens)); }

  const nn::Embedding<T>& embedding_layer() const { return *embedding_layer_; }

 private:
  std::shared_ptr<nn::Embedding<T>> embedding_layer_;
};

extern template class Embedding<float>;
extern template class Embedding<double>;

}  // namespace tapegrad::nn::transformer
