#pragma once
// The reference Transformer's MultiHeadAttention(d_model, h): per-head projection weights, batch-first.
//   d_k = d_v = d_model / h                           (d_model % h != 0 is a ValueError)
//   W_q, W_k, W_v   [h, d_model, d_k]                 one d_model x d_k matrix per head
//   q [batch, seq_q, d_model], k and v [batch, seq_k, d_model], mask_3d [batch, seq_q, seq_k]
//
//   Q = einsum("ijk,hkl->hijl", q, W_q)  [h, batch, seq_q, d_k] -> view [h*batch, seq_q, d_k]
//   K = einsum("ijk,hkl->hijl", k, W_k)  [h, batch, seq_k, d_k] -> view [h*batch, seq_k, d_k]
//   V = einsum("ijk,hkl->hijl", v, W_v)  [h, batch, seq_k, d_v] -> view [h*batch, seq_k, d_v]
//   A = scaled_dot_product_attention(Q, K, V, mask_3d repeated over heads)  [h*batch, seq_q, d_v]
//   A = cat(chunk(A, h, axis 0), axis 2)              [batch, seq_q, h*d_v]  (head-major features)
//   output = linear(A)                                [batch, seq_q, d_model]
//
// Differences from the reference Transformer's code, each deliberate:
// - The reference code repeats q, k, v over the heads and runs einsum("hijk,hkl->hijl"); "ijk,hkl->hijl"
//   without the repeat gives the same values and gradients (tested) with no h-fold copy.
// - The reference code views k and v with q's seq_len, which breaks cross-attention when seq_q != seq_k;
//   here each tensor is viewed with its own length.
// - The reference code leaves W_q, W_k, W_v uninitialised (torch.Tensor(...)); here each head's
//   [d_model, d_k] matrix is xavier_uniform: U(-b, b), b = sqrt(6 / (d_model + d_k)).
//
// MASK POLARITY: true/1 = "may attend" (masked_fill where the mask is 0), the opposite of the
// reference code's masked_fill_(mask, ...), enforced by the AttendMask type (AttendMask::blocking takes the
// reference code's). See scaled_dot_product_attention.h. mask_3d is
// [batch or 1, seq_q or 1, seq_k or 1] (e.g. a padding mask [batch, 1, seq_k], a causal mask
// [batch, seq_q, seq_q]); it is repeated over the heads head-major, as mask_3d.repeat(h, 1, 1).
//
// Attention probes (nn/attention_probe.h) see S and A as [batch, h, seq_q, seq_k] (a view and a
// permute of the [h*batch, seq_q, seq_k] heads); with one registered, the forward runs the
// unfused composition (scaled_dot_product_attention.h). There is no attention dropout here.
//
// Hook points: hook_q_input, hook_k_input, hook_v_input, hook_q, hook_k, hook_v, hook_attn_scores,
// hook_pattern, hook_z, hook_result (nn/attention_hook_points.h).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops/masking.h"
#include "nn/attention_hook_points.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/transformer/scaled_dot_product_attention.h"

namespace tapegrad::nn::transformer {

// An attention map for study: the last forward's softmax weights and, when that forward was
// recorded and a backward ran through it, dL/dweights.
template <class T>
struct AttentionWeights {
  xt::xarray<T> weights;              // [batch, heads, seq_q, seq_k]
  std::optional<xt::xarray<T>> grad;  // [batch, heads, seq_q, seq_k]
};

template <class T>
class MultiHeadAttention : public Module<T>, public ProbedAttention<T> {
 public:
  MultiHeadAttention(std::size_t d_model, std::size_t h, Generator& gen);

  std::string type_name() const override { return "MultiHeadAttention"; }
  Tensor<T> forward(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                    const std::optional<AttendMask>& mask_3d = std::nullopt);
  // forward, then the hooks (nn/module.h), which see q, k, v.
  Tensor<T> operator()(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                       const std::optional<AttendMask>& mask_3d = std::nullopt) {
    return this->run_hooks(forward(q, k, v, mask_3d), q, k, v);
  }

  std::size_t d_model() const { return d_model_; }
  std::size_t h() const { return h_; }
  std::size_t attention_heads() const override { return h_; }
  std::size_t d_k() const { return d_k_; }
  const Tensor<T>& W_q() const { return W_q_; }
  const Tensor<T>& W_k() const { return W_k_; }
  const Tensor<T>& W_v() const { return W_v_; }
  const ScaledDotProductAttention<T>& scaled_dot_product_attention() const { return *scaled_dot_product_attention_; }
  const Linear<T>& linear() const { return *linear_; }

  bool has_attention_weights() const { return scaled_dot_product_attention_->last_weights().defined(); }
  // The last forward's weights per head, [batch, h, seq_q, seq_k] (a reshape of the
  // [h*batch, seq_q, seq_k] weights the heads were computed as); ValueError before any forward.
  AttentionWeights<T> attention_weights() const;

 private:
  std::string probe_owner() const override;
  std::size_t d_model_, h_, d_k_;
  Tensor<T> W_k_, W_q_, W_v_;
  std::shared_ptr<ScaledDotProductAttention<T>> scaled_dot_product_attention_;
  std::shared_ptr<Linear<T>> linear_;
  AttentionHookPoints<T> points_;
};

extern template class MultiHeadAttention<float>;
extern template class MultiHeadAttention<double>;

}  // namespace tapegrad::nn::transformer
