#include "nn/mha/scaled_dot_product_attention.h"

#include <cmath>
#include <limits>

#include <xtensor/xoperation.hpp>

#include "autograd/kernels/layout/broadcast.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"

namespace tapegrad::nn::mha {

namespace {

// The leading (batch) axes of a shape with at least 2 axes.
Shape leading(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

}  // namespace

template <class T>
AttentionOutput<T> scaled_dot_product_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                                const std::optional<AttendMask>& mask, Dropout<T>& dropout,
                                                const std::string& who, const ProbeStep<T>* probe) {
  const std::string operands = " (query " + q.describe() + ", key " + k.describe() + ", value " + v.describe() + ")";
  if (q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2) {
    throw ShapeError(who + ": query, key and value must be [..., seq, d]" + operands);
  }
  if (q.size(-1) != k.size(-1)) throw ShapeError(who + ": query and key must share d_k" + operands);
  if (k.size(-2) != v.size(-2)) throw ShapeError(who + ": key and value must share seq_k" + operands);
  Shape scores_shape = kernels::broadcast_shapes(
      kernels::broadcast_shapes(leading(q.shape()), leading(k.shape()), who + ": leading axes of" + operands),
      leading(v.shape()), who + ": leading axes of" + operands);
  scores_shape.push_back(q.size(-2));
  scores_shape.push_back(k.size(-2));
  const Mask* allowed = mask ? &mask->may_attend() : nullptr;
  if (allowed && !kernels::broadcasts_to(Shape(allowed->shape().begin(), allowed->shape().end()), scores_shape)) {
    throw ShapeError(who + ": mask " + format_shape(allowed->shape()) + " does not broadcast to the attention scores " +
                     format_shape(scores_shape) + " [..., seq_q, seq_k]" + operands);
  }

  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  Tensor<T> scores = matmul(q, transpose(k, -2, -1)) * scale;
  if (mask) scores = masked_fill(scores, mask->blocked(), -std::numeric_limits<T>::infinity());
  if (probe) scores = (*probe)(AttentionStage::kScores, scores);
  Tensor<T> weights = softmax(scores, -1);
  if (probe) weights = (*probe)(AttentionStage::kWeights, weights);
  weights = dropout(weights);
  if (probe && dropout.active()) weights = (*probe)(AttentionStage::kDropped, weights);
  if (weights.requires_grad()) weights.retain_grad();
  return {matmul(weights, v), weights};
}

template <class T>
ScaledDotProductAttention<T>::ScaledDotProductAttention(Generator& gen, double dropout)
    : dropout_(this->register_module("dropout", std::make_shared<Dropout<T>>(gen, dropout))) {}

template <class T>
AttentionOutput<T> ScaledDotProductAttention<T>::forward(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                                         const std::optional<AttendMask>& mask) {
  return scaled_dot_product_attention(q, k, v, mask, *dropout_, "ScaledDotProductAttention");
}

#define TAPEGRAD_INSTANTIATE_SDPA(T)                                                                              \
  template AttentionOutput<T> scaled_dot_product_attention(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, \
                                                           const std::optional<AttendMask>&, Dropout<T>&,              \
                                                           const std::string&, const ProbeStep<T>*);             \
  template class ScaledDotProductAttention<T>;
TAPEGRAD_INSTANTIATE_SDPA(float)
TAPEGRAD_INSTANTIATE_SDPA(double)

}  // namespace tapegrad::nn::mha
