#pragma once
// Embedding(num_embeddings, embedding_dim, padding_idx): a lookup table weight [num, dim],
// initialised N(0, 1) with the padding_idx row zeroed, as PyTorch. Integer indices of any shape
// -> [..., dim]. The padding row receives no gradient, so it stays zero through training.
// This is also the reference Transformer's Embedding(vocab, d_model, pad_idx).
#include <optional>

#include "nn/module.h"

namespace tapegrad::nn {

template <class T>
class Embedding : public Module<T> {
 public:
  Embedding(std::size_t num_embeddings, std::size_t embedding_dim, Generator& gen,
            std::optional<Index> padding_idx = std::nullopt);

  std::string type_name() const override { return "Embedding"; }
  Tensor<T> forward(const IndexArray& indices);
  // forward, then the hooks (nn/module.h), which see no inputs (indices are not tensors).
  Tensor<T> operator()(const IndexArray& indices) { return this->run_hooks(forward(indices)); }

  const Tensor<T>& weight() const { return weight_; }
  std::optional<Index> padding_idx() const { return padding_idx_; }

 private:
  Tensor<T> weight_;
  std::optional<Index> padding_idx_;
};

extern template class Embedding<float>;
extern template class Embedding<double>;

}  // namespace tapegrad::nn
