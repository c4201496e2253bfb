#pragma once
// The reference Transformer's encoder, batch-first.
//
// TransformerEncoderLayer(d_model, d_ff, heads_num, dropout_rate, layer_norm_eps, gen, norm_first):
//   x [batch, seq, d_model], mask [batch or 1, seq or 1, seq] -> [batch, seq, d_model]
//   post-LN (default, as the annotated encoder-decoder):
//     x = layer_norm_self_attention(dropout_self_attention(multi_head_attention(x, x, x, mask)) + x)
//     x = layer_norm_ffn(dropout_ffn(ffn(x)) + x)
//   pre-LN (norm_first = true):
//     x = x + dropout_self_attention(multi_head_attention(n, n, n, mask)), n = layer_norm_self_attention(x)
//     x = x + dropout_ffn(ffn(layer_norm_ffn(x)))
//
// TransformerEncoder(vocab_size, max_len, pad_idx, d_model, N, d_ff, heads_num, dropout_rate,
//                    layer_norm_eps, gen, norm_first):
//   tokens [batch, seq] -> embedding -> positional_encoding -> encoder_layers.0 .. N-1
//   (-> norm, a final LayerNorm, only when norm_first) -> [batch, seq, d_model]
//
// MASK POLARITY: true/1 = "may attend" — the opposite of the reference Transformer's masked_fill_(mask, ...);
// the AttendMask type enforces it (a fill-polarity Mask does not convert).
// A source padding mask is [batch, 1, seq], true on real tokens (make_src_mask in masks.h).
#include <memory>
#include <optional>

#include "autograd/ops/masking.h"
#include "nn/transformer/ffn.h"
#include "nn/transformer/layer_stack.h"  // the stack's embedding, positional encoding and layer list
#include "nn/transformer/multi_head_attention.h"
#include "nn/transformer/sublayer_connection.h"

namespace tapegrad::nn::transformer {

template <class T>
class TransformerEncoderLayer : public ResidualLayer<T> {
 public:
  TransformerEncoderLayer(const LayerOptions& options, Generator& gen);
  // The reference Transformer's argument order.
  TransformerEncoderLayer(std::size_t d_model, std::size_t d_ff, std::size_t heads_num, double dropout_rate,
                          double layer_norm_eps, Generator& gen, bool norm_first = false)
      : TransformerEncoderLayer(LayerOptions{d_model, d_ff, heads_num, dropout_rate, layer_norm_eps, norm_first}, gen) {}

  std::string type_name() const override { return "TransformerEncoderLayer"; }
  Tensor<T> forward(const Tensor<T>& x, const std::optional<AttendMask>& mask = std::nullopt);
  // forward, then the hooks (nn/module.h), which see x.
  Tensor<T> operator()(const Tensor<T>& x, const std::optional<AttendMask>& mask = std::nullopt) {
    return this->run_hooks(forward(x, mask), x);
  }

  const MultiHeadAttention<T>& multi_head_attention() const { return *multi_head_attention_; }
  bool norm_first() const { return ffn_residual_.norm_first; }

 private:
  // In the reference Transformer's registration order (named_parameters(), checkpoints).
  std::shared_ptr<MultiHeadAttention<T>> multi_head_attention_;
  Residual<T> self_attention_residual_;  // dropout_self_attention, layer_norm_self_attention
  std::shared_ptr<FFN<T>> ffn_;
  Residual<T> ffn_residual_;  // dropout_ffn, layer_norm_ffn
};

template <class T>
class TransformerEncoder : public LayerStack<T, TransformerEncoderLayer<T>> {
 public:
  TransformerEncoder(const StackOptions& options, Generator& gen);
  // The reference Transformer's argument order.
  TransformerEncoder(std::size_t vocab_size, std::size_t max_len, Index pad_idx, std::size_t d_model, std::size_t N,
                     std::size_t d_ff, std::size_t heads_num, double dropout_rate, double layer_norm_eps, Generator& gen,
                     bool norm_first = false)
      : TransformerEncoder(StackOptions{vocab_size, max_len, pad_idx, N,
                                        {d_model, d_ff, heads_num, dropout_rate, layer_norm_eps, norm_first}},
                           gen) {}

  std::string type_name() const override { return "TransformerEncoder"; }
  Tensor<T> forward(const IndexArray& tokens, const std::optional<AttendMask>& mask = std::nullopt);
  // forward, then the hooks (nn/module.h), which see no inputs (tokens are not tensors).
  Tensor<T> operator()(const IndexArray& tokens, const std::optional<AttendMask>& mask = std::nullopt) {
    return this->run_hooks(forward(tokens, mask));
  }

  const ModuleList<T, TransformerEncoderLayer<T>>& encoder_layers() const { return this->layers(); }
};

extern template class TransformerEncoderLayer<float>;
extern template class TransformerEncoderLayer<double>;
extern template class TransformerEncoder<float>;
extern template class TransformerEncoder<double>;

}  // namespace tapegrad::nn::transformer
