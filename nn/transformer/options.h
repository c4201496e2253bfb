#pragma once
// Named options for the reference Transformer's modules, as AdamOptions is for Adam: the positional
// constructors follow the reference code and take up to eleven arguments, four adjacent size_t that swap
// silently. With designated initialisers (fields in declaration order, any of them left out):
//   Transformer<float> model({.src_vocab_size = 11, .tgt_vocab_size = 11, .N = 2,
//                             .layer = {.d_model = 32, .d_ff = 64, .heads_num = 4}}, gen);
// Defaults are PyTorch nn.Transformer's (The Annotated Transformer's make_model too, but for its
// LayerNorm eps 1e-6). Vocabulary sizes have none: 0 is refused with a ValueError by Embedding.
#include <cstddef>

#include "autograd/core/tensor.h"

namespace tapegrad::nn::transformer {

// One encoder or decoder layer.
struct LayerOptions {
  std::size_t d_model = 512;
  std::size_t d_ff = 2048;
  std::size_t heads_num = 8;
  double dropout_rate = 0.1;
  double layer_norm_eps = 1e-5;
  bool norm_first = false;  // pre-LN; post-LN (the reference Transformer's) by default
};

// An encoder or decoder stack: embedding, positional encoding, N layers.
struct StackOptions {
  std::size_t vocab_size = 0;
  std::size_t max_len = 5000;  // longest sequence the positional encoding covers
  Index pad_idx = 0;
  std::size_t N = 6;
  LayerOptions layer;
};

// The encoder-decoder model: both stacks share everything but the vocabulary.
struct TransformerOptions {
  std::size_t src_vocab_size = 0;
  std::size_t tgt_vocab_size = 0;
  std::size_t max_len = 5000;
  Index pad_idx = 0;
  std::size_t N = 6;
  LayerOptions layer;

  StackOptions encoder() const { return {src_vocab_size, max_len, pad_idx, N, layer}; }
  StackOptions decoder() const { return {tgt_vocab_size, max_len, pad_idx, N, layer}; }
};

}  // namespace tapegrad::nn::transformer
