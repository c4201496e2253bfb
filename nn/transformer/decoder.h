#pragma once
// The reference Transformer's decoder, batch-first.
//
// TransformerDecoderLayer(d_model, d_ff, heads_num, dropout_rate, layer_norm_eps, gen, norm_first):
//   forward(tgt [batch, seq_t, d_model], src [batch, seq_s, d_model] (the encoder's output),
//           mask_src_tgt [batch or 1, seq_t or 1, seq_s], mask_self [batch or 1, seq_t, seq_t])
//   -> [batch, seq_t, d_model]
//   post-LN (default, as the annotated encoder-decoder):
//     tgt = layer_norm_self_attention(tgt + dropout_self_attention(self_attention(tgt, tgt, tgt, mask_self)))
//     x   = layer_norm_src_tgt_attention(tgt + dropout_src_tgt_attention(src_tgt_attention(tgt, src, src, mask_src_tgt)))
//     x   = layer_norm_ffn(x + dropout_ffn(ffn(x)))
//   pre-LN (norm_first = true): each line becomes y + dropout(sublayer(norm(y))); src (already
//   normalised by a pre-LN encoder's final norm) is used as it is.
//
// TransformerDecoder(tgt_vocab_size, max_len, pad_idx, d_model, N, d_ff, heads_num, dropout_rate,
//                    layer_norm_eps, gen, norm_first):
//   tgt tokens [batch, seq_t] -> embedding -> positional_encoding -> decoder_layers.0 .. N-1
//   (-> norm, a final LayerNorm, only when norm_first) -> [batch, seq_t, d_model]
//
// MASK POLARITY: true/1 = "may attend" — the opposite of the reference Transformer's masked_fill_(mask, ...);
// the AttendMask type enforces it (a fill-polarity Mask does not convert).
// mask_self is normally causal AND not-padding (make_tgt_mask in masks.h), mask_src_tgt the
// source padding mask [batch, 1, seq_s] (make_src_mask). Both are optional.
#include <memory>
#include <optional>

#include "autograd/ops/masking.h"
#include "nn/transformer/ffn.h"
#include "nn/transformer/layer_stack.h"  // the stack's embedding, positional encoding and layer list
#include "nn/transformer/multi_head_attention.h"
#include "nn/transformer/sublayer_connection.h"

namespace tapegrad::nn::transformer {

template <class T>
class TransformerDecoderLayer : public ResidualLayer<T> {
 public:
  TransformerDecoderLayer(const LayerOptions& options, Generator& gen);
  // The reference Transformer's argument order.
  TransformerDecoderLayer(std::size_t d_model, std::size_t d_ff, std::size_t heads_num, double dropout_rate,
                          double layer_norm_eps, Generator& gen, bool norm_first = false)
      : TransformerDecoderLayer(LayerOptions{d_model, d_ff, heads_num, dropout_rate, layer_norm_eps, norm_first}, gen) {}

  std::string type_name() const override { return "TransformerDecoderLayer"; }
  Tensor<T> forward(const Tensor<T>& tgt, const Tensor<T>& src, const std::optional<AttendMask>& mask_src_tgt = std::nullopt,
                    const std::optional<AttendMask>& mask_self = std::nullopt);
  // forward, then the hooks (nn/module.h), which see tgt, src.
  Tensor<T> operator()(const Tensor<T>& tgt, const Tensor<T>& src,
                       const std::optional<AttendMask>& mask_src_tgt = std::nullopt,
                       const std::optional<AttendMask>& mask_self = std::nullopt) {
    return this->run_hooks(forward(tgt, src, mask_src_tgt, mask_self), tgt, src);
  }

  const MultiHeadAttention<T>& self_attention() const { return *self_attention_; }
  const MultiHeadAttention<T>& src_tgt_attention() const { return *src_tgt_attention_; }
  bool norm_first() const { return ffn_residual_.norm_first; }

 private:
  // In the reference Transformer's registration order (named_parameters(), checkpoints).
  std::shared_ptr<MultiHeadAttention<T>> self_attention_;
  Residual<T> self_attention_residual_;  // dropout_self_attention, layer_norm_self_attention
  std::shared_ptr<MultiHeadAttention<T>> src_tgt_attention_;
  Residual<T> src_tgt_attention_residual_;  // dropout_src_tgt_attention, layer_norm_src_tgt_attention
  std::shared_ptr<FFN<T>> ffn_;
  Residual<T> ffn_residual_;  // dropout_ffn, layer_norm_ffn
};

template <class T>
class TransformerDecoder : public LayerStack<T, TransformerDecoderLayer<T>> {
 public:
  TransformerDecoder(const StackOptions& options, Generator& gen);
  // The reference Transformer's argument order.
  TransformerDecoder(std::size_t tgt_vocab_size, std::size_t max_len, Index pad_idx, std::size_t d_model,
                     std::size_t N, std::size_t d_ff, std::size_t heads_num, double dropout_rate, double layer_norm_eps,
                     Generator& gen, bool norm_first = false)
      : TransformerDecoder(StackOptions{tgt_vocab_size, max_len, pad_idx, N,
                                        {d_model, d_ff, heads_num, dropout_rate, layer_norm_eps, norm_first}},
                           gen) {}

  std::string type_name() const override { return "TransformerDecoder"; }
  Tensor<T> forward(const IndexArray& tgt, const Tensor<T>& src, const std::optional<AttendMask>& mask_src_tgt = std::nullopt,
                    const std::optional<AttendMask>& mask_self = std::nullopt);
  // forward, then the hooks (nn/module.h), which see src only (tgt tokens are not a tensor).
  Tensor<T> operator()(const IndexArray& tgt, const Tensor<T>& src,
                       const std::optional<AttendMask>& mask_src_tgt = std::nullopt,
                       const std::optional<AttendMask>& mask_self = std::nullopt) {
    return this->run_hooks(forward(tgt, src, mask_src_tgt, mask_self), src);
  }

  const ModuleList<T, TransformerDecoderLayer<T>>& decoder_layers() const { return this->layers(); }
};

extern template class TransformerDecoderLayer<float>;
extern template class TransformerDecoderLayer<double>;
extern template class TransformerDecoder<float>;
extern template class TransformerDecoder<double>;

}  // namespace tapegrad::nn::transformer
