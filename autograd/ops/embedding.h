#pragma once
// Embedding lookup: rows of weight [num_embeddings, dim] picked by integer indices of any shape;
// the output has shape indices.shape + [dim]. The backward scatter-adds into the picked rows;
// the padding_idx row (when given) gets no gradient, as in PyTorch. That scatter is an op of its
// own (create_graph), whose backward is the gather again: embedding of its gradient, with the
// padding row zeroed.
#include <optional>

#include "autograd/core/tensor.h"

namespace tapegrad {

template <class T>
Tensor<T> embedding(const Tensor<T>& weight, const IndexArray& indices, std::optional<Index> padding_idx = std::nullopt,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
