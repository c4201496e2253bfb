#include "nn/mha/multi_head_attention.h"

#include "autograd/ops/shape.h"
#include "nn/attention_inputs.h"
#include "nn/head_width.h"

namespace tapegrad::nn::mha {

template <class T>
MultiHeadAttention<T>::MultiHeadAttention(std::size_t d_model, std::size_t n_heads, Generator& gen, double dropout)
    : d_model_(d_model), n_heads_(n_heads), d_k_(head_width(d_model, n_heads, "n_heads")) {
  query_ = this->register_module("query", std::make_shared<Linear<T>>(d_model, d_model, gen));
  key_ = this->register_module("key", std::make_shared<Linear<T>>(d_model, d_model, gen));
  value_ = this->register_module("value", std::make_shared<Linear<T>>(d_model, d_model, gen));
  proj_ = this->register_module("proj", std::make_shared<Linear<T>>(d_model, d_model, gen));
  attn_drop_ = this->register_module("attn_drop", std::make_shared<Dropout<T>>(gen, dropout));
  for (auto [name, point] : attention_hook_points(points_, *this)) this->register_hook_point(name, *point);
}

template <class T>
std::string MultiHeadAttention<T>::describe() const {
  return "MultiHeadAttention(d_model=" + std::to_string(d_model_) + ", n_heads=" + std::to_string(n_heads_) + ")";
}

template <class T>
Tensor<T> MultiHeadAttention<T>::split_heads(const Tensor<T>& x) const {
  const auto batch = static_cast<Index>(x.size(0)), seq = static_cast<Index>(x.size(1));
  return transpose(reshape(x, {batch, seq, static_cast<Index>(n_heads_), static_cast<Index>(d_k_)}), 1, 2);
}

template <class T>
Mask MultiHeadAttention<T>::probe_mask(const std::optional<AttendMask>& mask, std::size_t batch, std::size_t seq_q,
                                       std::size_t seq_k) const {
  if (!mask) return broadcast_may_attend(nullptr, batch, seq_q, seq_k);
  const Mask& m = mask->may_attend();
  if (m.dimension() > 4 || (m.dimension() == 4 && m.shape()[1] != 1)) {
    throw ValueError(describe() + ": attention probes and hook_attn_scores / hook_pattern take a mask that is the same for every head, [batch or 1, 1, "
                     "seq_q or 1, seq_k] or fewer axes; got mask " + format_shape(m.shape()));
  }
  // Left-pad to [batch, 1, seq_q, seq_k] (NumPy's broadcasting), then drop the heads axis.
  std::vector<std::size_t> shape(4 - m.dimension(), 1);
  shape.insert(shape.end(), m.shape().begin(), m.shape().end());
  Mask ordered = m;
  ordered.reshape({shape[0], shape[2], shape[3]});
  return broadcast_may_attend(&ordered, batch, seq_q, seq_k);
}

template <class T>
AttentionOutput<T> MultiHeadAttention<T>::forward(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                                                  const std::optional<AttendMask>& mask) {
  check_attention_inputs(AttentionFamily::kMha, d_model_, query, key, value, [this] { return describe(); });
  std::optional<ProbeStep<T>> probe;
  if (this->maps_observed()) {
    // The mask is made at the first stage, after scaled_dot_product_attention has checked its shape.
    probe = [this, &mask, may_attend = std::optional<Mask>()](AttentionStage stage, const Tensor<T>& x) mutable {
      if (!may_attend) may_attend = probe_mask(mask, x.size(0), x.size(2), x.size(3));
      return this->run_probes(stage, x, *may_attend);  // x is already [batch, n_heads, seq_q, seq_k]
    };
  }
  // The heads are [batch, n_heads, seq, d], the hook points' layout.
  auto heads = scaled_dot_product_attention(
      points_.q(split_heads((*query_)(points_.q_input(query)))), points_.k(split_heads((*key_)(points_.k_input(key)))),
      points_.v(split_heads((*value_)(points_.v_input(value)))), mask, *attn_drop_, describe(), probe ? &*probe : nullptr);
  const Tensor<T> z = points_.z(heads.output);
  if (points_.result.active()) {
    return {sum_of_head_results(points_.result(head_results(z, *proj_)), *proj_), heads.attention_weights};
  }
  // [batch, n_heads, seq_q, d_k] -> [batch, seq_q, d_model]
  const Tensor<T> merged = reshape(transpose(z, 1, 2), {static_cast<Index>(query.size(0)),
                                                        static_cast<Index>(query.size(1)),
                                                        static_cast<Index>(d_model_)});
  return {(*proj_)(merged), heads.attention_weights};
}

template class MultiHeadAttention<float>;
template class MultiHeadAttention<double>;

}  // namespace tapegrad::nn::mha
