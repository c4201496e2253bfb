#pragma once
// labml.ai's MultiHeadAttention(heads, d_model, dropout_prob = 0.1, bias = true),
// sequence-first:
//
//   query [seq_q, batch_size, d_model], key and value [seq_k, batch_size, d_model]
//   (seq_k may differ from seq_q: encoder-decoder cross-attention)
//   q = query(query)                       [seq_q, batch_size, heads, d_k]   d_k = d_model / heads
//   k = key(key), v = value(value)         [seq_k, batch_size, heads, d_k]
//   scores = einsum("ibhd,jbhd->ijbh", q, k) / sqrt(d_k)          [seq_q, seq_k, batch_size, heads]
//   scores = masked_fill(scores, mask.blocked(), -inf)             (when a mask is given)
//   attn   = softmax(scores, dim = 1)       over the key axis: attn[i, :, b, h] sums to 1
//   x      = einsum("ijbh,jbhd->ibhd", dropout(attn), v)           [seq_q, batch_size, heads, d_k]
//   out    = output(reshape(x, [seq_q, batch_size, heads * d_k]))  [seq_q, batch_size, d_model]
//
// Mask polarity: true (1) means "may attend", false (0) masks the key out; the AttendMask type
// enforces it (a masked_fill-style Mask does not convert; see AttendMask::blocking). A mask is
// [seq_q or 1, seq_k, batch_size or 1] (a size-1 axis broadcasts over queries or over the batch)
// and the same mask applies to every head. A query row whose keys are all masked gets an all-zero
// attention row (tapegrad's softmax of an all -inf row; PyTorch would give NaN), so its output row
// is exactly output.bias and no gradient flows into that row's scores.
//
// Children, named as in labml's code so that parameter names match PyTorch: query, key, value
// (PrepareForMultiHeadAttention; value always has a bias, query and key only with bias = true),
// softmax, output (Linear(d_model, d_model)), dropout. Parameters: query.linear.weight,
// query.linear.bias, key.linear.weight, key.linear.bias, value.linear.weight, value.linear.bias,
// output.weight, output.bias.
//
// attention() is the last attention map, after softmax and before dropout,
// [seq_q, seq_k, batch_size, heads]. When the forward was recorded on a tape it is marked
// retain_grad(), so after tape.backward(...) attention().grad() is dL/dattn: what a user studying
// the gradient flow into attention reads.
//
// Attention probes (nn/attention_probe.h) see S and A as [batch, heads, seq_q, seq_k] (a permute
// of the layout above), and the dropped weights in training; what they return is permuted back.
// A probe replacing A changes attention() too.
//
// Hook points: hook_q_input, hook_k_input, hook_v_input, hook_q, hook_k, hook_v, hook_attn_scores,
// hook_pattern, hook_z, hook_result (nn/attention_hook_points.h).
#include <memory>
#include <optional>

#include "autograd/ops/masking.h"
#include "nn/activation.h"
#include "nn/attention_hook_points.h"
#include "nn/attention_probe.h"
#include "nn/dropout.h"
#include "nn/labml/prepare_for_multi_head_attention.h"
#include "nn/linear.h"

namespace tapegrad::nn::labml {

template <class T>
class MultiHeadAttention : public Module<T>, public ProbedAttention<T> {
 public:
  // ValueError unless heads > 0 and d_model is a positive multiple of heads.
  MultiHeadAttention(std::size_t heads, std::size_t d_model, Generator& gen, double dropout_prob = 0.1,
                     bool bias = true);

  std::string type_name() const override { return "MultiHeadAttention"; }

  // The layout above. ShapeError naming the argument and the shapes when query, key or value is
  // not [seq, batch_size, d_model], key and value differ in length, or the batch sizes differ,
  // and (from prepare_mask) when the mask does not fit.
  Tensor<T> forward(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                    const std::optional<AttendMask>& mask = std::nullopt);
  // forward, then the hooks (nn/module.h), which see query, key, value.
  Tensor<T> operator()(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                       const std::optional<AttendMask>& mask = std::nullopt) {
    return this->run_hooks(forward(query, key, value, mask), query, key, value);
  }

  // q [seq_q, batch_size, heads, d_k], k [seq_k, batch_size, heads, d_k] -> [seq_q, seq_k, batch_size, heads]:
  // score[i, j, b, h] = sum_d q[i, b, h, d] * k[j, b, h, d] (unscaled).
  Tensor<T> get_score(const Tensor<T>& query, const Tensor<T>& key) const;

  // mask [seq_q or 1, seq_k, batch_size or 1] -> [seq_q or 1, seq_k, batch_size or 1, 1], which
  // broadcasts over the heads of the scores. query_shape is [seq_q, batch_size, ...] and key_shape
  // [seq_k, ...] (the inputs' shapes). ShapeError naming the mask, query and key shapes when the
  // mask does not have 3 axes or one of its axes does not fit (labml.ai's three asserts).
  AttendMask prepare_mask(const AttendMask& mask, const Shape& query_shape, const Shape& key_shape) const;

  // The last attention map [seq_q, seq_k, batch_size, heads] (post-softmax, pre-dropout);
  // undefined before the first forward.
  const Tensor<T>& attention() const { return attn_; }

  std::size_t heads() const { return heads_; }
  std::size_t attention_heads() const override { return heads_; }
  std::size_t d_k() const { return d_k_; }
  double scale() const { return scale_; }
  const PrepareForMultiHeadAttention<T>& query() const { return *query_; }
  const PrepareForMultiHeadAttention<T>& key() const { return *key_; }
  const PrepareForMultiHeadAttention<T>& value() const { return *value_; }
  const Linear<T>& output() const { return *output_; }

 private:
  std::string describe() const;  // "MultiHeadAttention(heads=2, d_model=8)" for messages
  std::string probe_owner() const override { return describe(); }

  std::size_t heads_, d_model_, d_k_;
  double scale_;
  std::shared_ptr<PrepareForMultiHeadAttention<T>> query_, key_, value_;
  std::shared_ptr<Softmax<T>> softmax_;
  std::shared_ptr<Linear<T>> output_;
  std::shared_ptr<Dropout<T>> dropout_;
  Tensor<T> attn_;
  AttentionHookPoints<T> points_;
};

extern template class MultiHeadAttention<float>;
extern template class MultiHeadAttention<double>;

}  // namespace tapegrad::nn::labml
