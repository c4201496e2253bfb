#include "nn/transformer/scaled_dot_product_attention.h"

#include <cmath>
#include <limits>

#include "autograd/ops/attention.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/softmax.h"

namespace tapegrad::nn::transformer {

namespace {

// The module's name in messages (built only when a check fails).
std::string who(std::size_t d_k) { return "ScaledDotProductAttention(d_k=" + std::to_string(d_k) + ")"; }

// The [batch, seq_q, seq_k] scores shape, after checking q [batch, seq_q, d_k],
// k [batch, seq_k, d_k] and v [batch, seq_k, d_v] against each other and against d_k.
template <class T>
Shape scores_shape(std::size_t d_k, const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v) {
  const auto shapes = [&] { return "q " + q.describe() + ", k " + k.describe() + ", v " + v.describe(); };
  if (q.ndim() != 3 || k.ndim() != 3 || v.ndim() != 3) {
    throw ShapeError(who(d_k) + ": q, k and v must be 3-D [batch, seq, features], got " + shapes());
  }
  if (q.size(2) != d_k || k.size(2) != d_k) {
    throw ShapeError(who(d_k) + ": q and k must end in d_k = " + std::to_string(d_k) + ", got " + shapes());
  }
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || v.size(1) != k.size(1)) {
    throw ShapeError(who(d_k) + ": q, k and v must share the batch size, and k and v the sequence length, got " +
                     shapes());
  }
  return {q.size(0), q.size(1), k.size(1)};
}

// Checks that the mask has the scores' rank and broadcasts to them.
void check_mask(std::size_t d_k, const Mask& mask, const Shape& scores) {
  const Shape shape(mask.shape().begin(), mask.shape().end());
  if (shape.size() != scores.size()) {
    throw ShapeError(who(d_k) + ": the mask has " + std::to_string(shape.size()) + " dims " + format_shape(shape) +
                     " but the attention scores have " + std::to_string(scores.size()) + " " + format_shape(scores));
  }
  for (std::size_t d = 0; d < scores.size(); ++d) {
    if (shape[d] != 1 && shape[d] != scores[d]) {
      throw ShapeError(who(d_k) + ": the mask " + format_shape(shape) + " does not broadcast to the attention scores " +
                       format_shape(scores));
    }
  }
}

}  // namespace

template <class T>
ScaledDotProductAttention<T>::ScaledDotProductAttention(std::size_t d_k) : d_k_(d_k) {
  if (d_k == 0) throw ValueError("ScaledDotProductAttention: d_k must be positive");
}

template <class T>
Tensor<T> ScaledDotProductAttention<T>::forward(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                                const std::optional<AttendMask>& mask, const ProbeStep<T>* probe) {
  const Shape shape = scores_shape(d_k_, q, k, v);
  if (mask) check_mask(d_k_, mask->may_attend(), shape);
  // q k^T with k read transposed in place; then scale, mask (true = may attend) and softmax in
  // one fused pass, equal to masked_fill(scores / sqrt(d_k), mask.blocked(), lowest) followed by
  // softmax. A probe needs S and A as tensors of their own: the composition.
  const Tensor<T> scores = einsum("bqd,bkd->bqk", q, k);
  const auto scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d_k_)));
  if (probe == nullptr) {
    last_weights_ = attention_softmax(scores, mask, scale);
  } else {
    Tensor<T> s = scores * scale;
    if (mask) s = masked_fill(s, mask->blocked(), std::numeric_limits<T>::lowest());
    last_weights_ = (*probe)(AttentionStage::kWeights, softmax((*probe)(AttentionStage::kScores, s), -1));
  }
  if (last_weights_.requires_grad()) last_weights_.retain_grad();
  return matmul(last_weights_, v);
}

template class ScaledDotProductAttention<float>;
template class ScaledDotProductAttention<double>;

}  // namespace tapegrad::nn::transformer
