#include "nn/labml/multi_head_attention.h"

#include <cmath>
#include <limits>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xoperation.hpp>

#include "autograd/ops/operators.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/shape.h"
#include "nn/attention_inputs.h"
#include "nn/head_width.h"

namespace tapegrad::nn::labml {

template <class T>
MultiHeadAttention<T>::MultiHeadAttention(std::size_t heads, std::size_t d_model, Generator& gen, double dropout_prob,
                                          bool bias)
    : heads_(heads), d_model_(d_model), d_k_(head_width(d_model, heads, "heads")) {
  scale_ = 1.0 / std::sqrt(static_cast<double>(d_k_));
  // Registration order is labml.ai's attribute order, so named_parameters() lists as PyTorch does.
  const auto prepare = [&](bool with_bias) {
    return std::make_shared<PrepareForMultiHeadAttention<T>>(d_model, heads, d_k_, gen, with_bias);
  };
  query_ = this->register_module("query", prepare(bias));
  key_ = this->register_module("key", prepare(bias));
  value_ = this->register_module("value", prepare(true));  // value always has a bias, as in labml's code
  softmax_ = this->register_module("softmax", std::make_shared<Softmax<T>>(1));
  output_ = this->register_module("output", std::make_shared<Linear<T>>(d_model, d_model, gen));
  dropout_ = this->register_module("dropout", std::make_shared<Dropout<T>>(gen, dropout_prob));
  for (auto [name, point] : attention_hook_points(points_, *this)) this->register_hook_point(name, *point);
}

template <class T>
std::string MultiHeadAttention<T>::describe() const {
  return "MultiHeadAttention(heads=" + std::to_string(heads_) + ", d_model=" + std::to_string(d_model_) + ")";
}

template <class T>
Tensor<T> MultiHeadAttention<T>::get_score(const Tensor<T>& query, const Tensor<T>& key) const {
  return einsum("ibhd,jbhd->ijbh", query, key);
}

template <class T>
AttendMask MultiHeadAttention<T>::prepare_mask(const AttendMask& mask, const Shape& query_shape,
                                               const Shape& key_shape) const {
  const Shape m(mask.may_attend().shape().begin(), mask.may_attend().shape().end());
  const auto fail = [&](const std::string& why) {
    throw ShapeError(describe() + ".prepare_mask: mask " + format_shape(m) + " " + why + " (query " +
                     format_shape(query_shape) + ", key " + format_shape(key_shape) +
                     "; the mask must be [seq_q or 1, seq_k, batch_size or 1])");
  };
  if (query_shape.size() < 2 || key_shape.empty()) {
    fail("cannot be checked: query must be [seq_q, batch_size, ...] and key [seq_k, ...]");
  }
  if (m.size() != 3) fail("must have 3 axes");
  if (m[0] != 1 && m[0] != query_shape[0]) {
    fail("has " + std::to_string(m[0]) + " query positions on axis 0, but must have 1 or seq_q = " +
         std::to_string(query_shape[0]));
  }
  if (m[1] != key_shape[0]) {
    fail("has " + std::to_string(m[1]) + " key positions on axis 1, but must have seq_k = " +
         std::to_string(key_shape[0]));
  }
  if (m[2] != 1 && m[2] != query_shape[1]) {
    fail("has " + std::to_string(m[2]) + " batch entries on axis 2, but must have 1 or batch_size = " +
         std::to_string(query_shape[1]));
  }
  // The same mask for every head: [.., .., .., 1].
  Mask prepared = mask.may_attend();
  prepared.reshape({m[0], m[1], m[2], std::size_t{1}});
  return AttendMask(std::move(prepared));
}

template <class T>
Tensor<T> MultiHeadAttention<T>::forward(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                                         const std::optional<AttendMask>& mask) {
  check_attention_inputs(AttentionFamily::kLabml, d_model_, query, key, value, [this] { return describe(); });
  std::optional<AttendMask> keep;
  if (mask) keep = prepare_mask(*mask, query.shape(), key.shape());

  // [seq, batch_size, heads, d] <-> [batch_size, heads, seq, d], the hook points' layout.
  const auto through = [](const HookPoint<T>& point, const Tensor<T>& x) {
    return point.active() ? permute(point(permute(x, {1, 2, 0, 3})), {2, 0, 1, 3}) : x;
  };
  // [seq, batch_size, d_model] <-> [batch_size, seq, d_model], the input points' layout.
  const auto input = [](const HookPoint<T>& point, const Tensor<T>& x) {
    return point.active() ? permute(point(permute(x, {1, 0, 2})), {1, 0, 2}) : x;
  };
  const Tensor<T> q = through(points_.q, (*query_)(input(points_.q_input, query)));  // [seq_q, batch_size, heads, d_k]
  const Tensor<T> k = through(points_.k, (*key_)(input(points_.k_input, key)));      // [seq_k, batch_size, heads, d_k]
  const Tensor<T> v = through(points_.v, (*value_)(input(points_.v_input, value)));  // [seq_k, batch_size, heads, d_k]

  Tensor<T> scores = get_score(q, k) * static_cast<T>(scale_);  // [seq_q, seq_k, batch_size, heads]
  if (keep) scores = masked_fill(scores, keep->blocked(), -std::numeric_limits<T>::infinity());

  // Probes see [batch, heads, seq_q, seq_k]: {2, 3, 0, 1} maps [i, j, b, h] there and back.
  const bool probed = this->maps_observed();
  std::optional<Mask> may_attend;  // made only when probed: a forward without probes allocates nothing more
  if (probed) {
    // [seq_q or 1, seq_k, batch or 1] -> [batch or 1, seq_q or 1, seq_k]
    const std::optional<Mask> ordered =
        mask ? std::optional<Mask>(xt::transpose(mask->may_attend(), {2, 0, 1})) : std::nullopt;
    may_attend = broadcast_may_attend(ordered ? &*ordered : nullptr, query.size(1), query.size(0), key.size(0));
  }
  const auto probe = [&](AttentionStage stage, const Tensor<T>& x) {
    return permute(this->run_probes(stage, permute(x, {2, 3, 0, 1}), *may_attend), {2, 3, 0, 1});
  };
  if (probed) scores = probe(AttentionStage::kScores, scores);

  Tensor<T> attn = (*softmax_)(scores);
  if (probed) attn = probe(AttentionStage::kWeights, attn);
  if (attn.requires_grad()) attn.retain_grad();
  attn_ = attn;

  Tensor<T> dropped = (*dropout_)(attn);
  if (probed && dropout_->active()) dropped = probe(AttentionStage::kDropped, dropped);
  const Tensor<T> x = through(points_.z, einsum("ijbh,jbhd->ibhd", dropped, v));  // [seq_q, batch_size, heads, d_k]
  if (points_.result.active()) {
    const Tensor<T> results = points_.result(head_results(permute(x, {1, 2, 0, 3}), *output_));
    return permute(sum_of_head_results(results, *output_), {1, 0, 2});
  }
  return (*output_)(reshape(x, {static_cast<Index>(query.size(0)), static_cast<Index>(query.size(1)), Index{-1}}));
}

template class MultiHeadAttention<float>;
template class MultiHeadAttention<double>;

}  // namespace tapegrad::nn::labml
