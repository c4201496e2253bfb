#pragma once
// Batch-first scaled dot-product attention (the batch-first reference's ScaledDotProductAttention):
//
//   q [..., seq_q, d_k], k [..., seq_k, d_k], v [..., seq_k, d_v]   (leading axes broadcast)
//   scores  = q k^T / sqrt(d_k)                                     [..., seq_q, seq_k]
//   scores  = masked_fill(scores, mask.blocked(), -inf)             (when a mask is given)
//   weights = dropout(softmax(scores, dim = -1))                    over the key axis only
//   output  = weights v                                             [..., seq_q, d_v]
//
// Mask polarity: true (1) means "may attend", false (0) masks the key out; the AttendMask type
// enforces it (a masked_fill-style Mask does not convert; see AttendMask::blocking). The mask broadcasts to
// the scores [..., seq_q, seq_k], e.g. create_padding_mask's [batch, 1, 1, seq_k] or
// create_look_ahead_mask's [seq_q, seq_k]; a masked key gets exactly zero weight. A query whose
// keys are all masked gets an all-zero weight row (tapegrad's softmax of an all -inf row; PyTorch
// gives NaN), hence an all-zero output row.
//
// attention_weights are the weights that multiply v: the softmax in eval, with dropout's zeros and
// 1/(1-p) rescaling in training. When the forward was recorded on a tape they are marked
// retain_grad(), so after tape.backward(...) attention_weights.grad() is dL/dweights.
#include <memory>
#include <optional>
#include <string>

#include "autograd/ops/masking.h"
#include "nn/attention_probe.h"
#include "nn/dropout.h"

namespace tapegrad::nn::mha {

template <class T>
struct AttentionOutput {
  Tensor<T> output;             // [..., seq_q, d_v]
  Tensor<T> attention_weights;  // [..., seq_q, seq_k]
};

// The computation above, shared by ScaledDotProductAttention and MultiHeadAttention: `dropout` is
// the caller's attention-dropout child and `who` names the caller in error messages. A probe step
// (MultiHeadAttention's attention probes, nn/attention_probe.h) is called on the masked scores,
// on the softmax and, when dropout is active, on the dropped weights, and its results are used
// from there on. ShapeError
// naming the shapes when an operand has fewer than 2 axes, q and k differ in d_k, k and v differ
// in seq_k, the leading axes do not broadcast, or the mask does not broadcast to the scores.
template <class T>
AttentionOutput<T> scaled_dot_product_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                                const std::optional<AttendMask>& mask, Dropout<T>& dropout,
                                                const std::string& who, const ProbeStep<T>* probe = nullptr);

// The module: no parameters, one child `dropout` (Dropout(dropout), identity in eval).
template <class T>
class ScaledDotProductAttention : public Module<T> {
 public:
  explicit ScaledDotProductAttention(Generator& gen, double dropout = 0.0);

  std::string type_name() const override { return "ScaledDotProductAttention"; }
  AttentionOutput<T> forward(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                             const std::optional<AttendMask>& mask = std::nullopt);
  // forward, then the hooks (nn/module.h) on the output tensor; they see q, k, v.
  // attention_weights stay forward's: a replaced output was not computed from them.
  AttentionOutput<T> operator()(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                const std::optional<AttendMask>& mask = std::nullopt) {
    AttentionOutput<T> out = forward(q, k, v, mask);
    out.output = this->run_hooks(std::move(out.output), q, k, v);
    return out;
  }

 private:
  std::shared_ptr<Dropout<T>> dropout_;
};

extern template class ScaledDotProductAttention<float>;
extern template class ScaledDotProductAttention<double>;

}  // namespace tapegrad::nn::mha
