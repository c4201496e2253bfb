#pragma once
// The reference Transformer's ScaledDotProductAttention(d_k), batch-first:
//   q [batch, seq_q, d_k], k [batch, seq_k, d_k], v [batch, seq_k, d_v]
//   scores  = q k^T / sqrt(d_k)                        [batch, seq_q, seq_k]
//   scores  = masked_fill(scores, mask.blocked(), lowest)   (when a mask is given)
//   weights = softmax(scores, dim 2)                   [batch, seq_q, seq_k]
//   output  = weights v                                [batch, seq_q, d_v]
//
// MASK POLARITY — THE OPPOSITE OF THE REFERENCE CODE'S. Here, as in every tapegrad nn module, a mask
// value of true/1 means "may attend" and the score is filled where the mask is false/0. The annotated encoder-decoder
// calls masked_fill_(mask, ...), which fills where its mask is TRUE. The AttendMask type enforces
// the polarity: a mask ported from that code comes in as AttendMask::blocking(mask), and a plain
// Mask does not convert.
//
// The mask must have the scores' rank (3; the reference code raises ValueError otherwise, we throw
// ShapeError naming both ranks and shapes) and broadcast to [batch, seq_q, seq_k], e.g. a padding
// mask [batch, 1, seq_k]. Masked scores become std::numeric_limits<T>::lowest() (the reference Transformer's
// -torch.finfo.max): the most negative finite value, so a masked weight underflows to exactly 0
// after softmax, and a row whose every key is masked gets uniform weights instead of NaN (as in
// the reference code). The scale, mask and softmax run as one fused op (attention_softmax) with that result.
//
// With a probe step (MultiHeadAttention's attention probes, nn/attention_probe.h) the forward runs
// the unfused composition instead, masked_fill(scores * scale, blocked, lowest) then softmax, and
// continues from what the step returns for the scores and for the weights.
//
// The weights of the last forward stay available (last_weights()); when the forward was recorded
// they are marked retain_grad(), so dL/dweights can be read after backward.
#include <optional>

#include "autograd/ops/masking.h"
#include "nn/attention_probe.h"
#include "nn/module.h"

namespace tapegrad::nn::transformer {

template <class T>
class ScaledDotProductAttention : public Module<T> {
 public:
  explicit ScaledDotProductAttention(std::size_t d_k);

  std::string type_name() const override { return "ScaledDotProductAttention"; }
  Tensor<T> forward(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                    const std::optional<AttendMask>& mask = std::nullopt, const ProbeStep<T>* probe = nullptr);
  // forward, then the hooks (nn/module.h), which see q, k, v.
  Tensor<T> operator()(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                       const std::optional<AttendMask>& mask = std::nullopt, const ProbeStep<T>* probe = nullptr) {
    return this->run_hooks(forward(q, k, v, mask, probe), q, k, v);
  }

  std::size_t d_k() const { return d_k_; }
  // [batch, seq_q, seq_k] softmax weights of the last forward (undefined before the first one).
  const Tensor<T>& last_weights() const { return last_weights_; }

 private:
  std::size_t d_k_;
  Tensor<T> last_weights_;
};

extern template class ScaledDotProductAttention<float>;
extern template class ScaledDotProductAttention<double>;

}  // namespace tapegrad::nn::transformer
