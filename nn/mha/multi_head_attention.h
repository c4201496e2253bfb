#pragma once
// Batch-first MultiHeadAttention(d_model, n_heads, dropout = 0.1) (the batch-first reference, with the forward
// corrected in the batch-first review; each of the six bugs that review lists has a test in
// tests/test_nn_batch_first_attention.cpp):
//
//   query [batch, seq_q, d_model], key and value [batch, seq_k, d_model]
//   (self-attention: all three the same; cross-attention: seq_k may differ from seq_q)
//   Q = query(query), K = key(key), V = value(value)            projections, [batch, seq, d_model]
//   split heads: [batch, seq, d_model] -> [batch, n_heads, seq, d_k]      d_k = d_model / n_heads
//   weights = attn_drop(softmax(masked_fill(Q K^T / sqrt(d_k), mask.blocked(), -inf), dim = -1))
//                                                               [batch, n_heads, seq_q, seq_k]
//   heads   = weights V                                         [batch, n_heads, seq_q, d_k]
//   output  = proj(merge heads -> [batch, seq_q, d_model])     [batch, seq_q, d_model]
//
// Mask polarity: true (1) means "may attend", false (0) masks the key out; the AttendMask type
// enforces it (a masked_fill-style Mask does not convert; see AttendMask::blocking). The mask
// broadcasts to [batch, n_heads, seq_q, seq_k]: create_padding_mask's [batch, 1, 1, seq_k],
// create_look_ahead_mask's [seq_q, seq_k], or both combined (padding && look_ahead). A query whose keys are all masked
// gets an all-zero weight row (tapegrad's softmax of an all -inf row), so its output row is
// exactly proj.bias.
//
// Children, named as in the batch-first review's corrected module: query, key, value, proj (each
// Linear(d_model, d_model)) and attn_drop (Dropout(dropout)). Parameters: query.weight,
// query.bias, key.weight, key.bias, value.weight, value.bias, proj.weight, proj.bias,
// 4 * (d_model^2 + d_model) in all.
//
// attention_weights are the weights that multiply V (see scaled_dot_product_attention.h): the
// softmax in eval, with dropout applied in training; under a tape they are marked retain_grad(),
// so after tape.backward(...) attention_weights.grad() is dL/dweights.
//
// Attention probes (nn/attention_probe.h) see S and A as [batch, n_heads, seq_q, seq_k] (this
// family's own layout), and the dropped weights in training; a replacement of the last stage run
// is what attention_weights returns. A probed forward takes a mask that is the same for every
// head only (its heads axis of size 1), else ValueError naming the mask's shape.
//
// Hook points: hook_q_input, hook_k_input, hook_v_input, hook_q, hook_k, hook_v, hook_attn_scores,
// hook_pattern, hook_z, hook_result (nn/attention_hook_points.h).
#include <memory>
#include <optional>

#include "nn/attention_hook_points.h"
#include "nn/linear.h"
#include "nn/mha/scaled_dot_product_attention.h"

namespace tapegrad::nn::mha {

template <class T>
class MultiHeadAttention : public Module<T>, public ProbedAttention<T> {
 public:
  // ValueError unless n_heads > 0 and d_model is a positive multiple of n_heads.
  MultiHeadAttention(std::size_t d_model, std::size_t n_heads, Generator& gen, double dropout = 0.1);

  std::string type_name() const override { return "MultiHeadAttention"; }

  // The layout above. ShapeError naming the argument and the shapes when query, key or value is
  // not [batch, seq, d_model], key and value differ in length, the batch sizes differ, or the
  // mask does not broadcast to [batch, n_heads, seq_q, seq_k].
  AttentionOutput<T> forward(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                             const std::optional<AttendMask>& mask = std::nullopt);
  // forward, then the hooks (nn/module.h) on the output tensor; they see query, key, value.
  // attention_weights stay forward's: a replaced output was not computed from them.
  AttentionOutput<T> operator()(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                                const std::optional<AttendMask>& mask = std::nullopt) {
    AttentionOutput<T> out = forward(query, key, value, mask);
    out.output = this->run_hooks(std::move(out.output), query, key, value);
    return out;
  }

  std::size_t n_heads() const { return n_heads_; }
  std::size_t attention_heads() const override { return n_heads_; }
  std::size_t d_k() const { return d_k_; }
  const Linear<T>& query() const { return *query_; }
  const Linear<T>& key() const { return *key_; }
  const Linear<T>& value() const { return *value_; }
  const Linear<T>& proj() const { return *proj_; }

 private:
  std::string describe() const;  // "MultiHeadAttention(d_model=8, n_heads=2)" for messages
  std::string probe_owner() const override { return describe(); }
  // The probes' [batch, seq_q, seq_k] mask for a mask that broadcasts to [batch, n_heads, seq_q, seq_k].
  Mask probe_mask(const std::optional<AttendMask>& mask, std::size_t batch, std::size_t seq_q, std::size_t seq_k) const;
  // [batch, seq, d_model] -> [batch, n_heads, seq, d_k]
  Tensor<T> split_heads(const Tensor<T>& x) const;

  std::size_t d_model_, n_heads_, d_k_;
  std::shared_ptr<Linear<T>> query_, key_, value_, proj_;
  std::shared_ptr<Dropout<T>> attn_drop_;
  AttentionHookPoints<T> points_;
};

extern template class MultiHeadAttention<float>;
extern template class MultiHeadAttention<double>;

}  // namespace tapegrad::nn::mha
