#include "nn/transformer/multi_head_attention.h"

#include <algorithm>
#include <cmath>

#include "autograd/ops/linalg.h"
#include "autograd/ops/shape.h"
#include "nn/attention_inputs.h"
#include "nn/head_width.h"
#include "nn/init.h"

namespace tapegrad::nn::transformer {

namespace {

// mask [batch, m1, m2] -> [h*batch, m1, m2], copy `head` of batch row b at head*batch + b (the
// head-major order of the projected Q, K, V, as mask_3d.repeat(h, 1, 1)). A batch-1 mask already
// broadcasts over h*batch and is returned as it is.
Mask repeat_over_heads(const Mask& mask, std::size_t h) {
  const std::size_t batch = mask.shape()[0];
  if (batch == 1) return mask;
  const std::size_t per_batch = mask.shape()[1] * mask.shape()[2];
  Mask out = Mask::from_shape({h * batch, mask.shape()[1], mask.shape()[2]});
  for (std::size_t head = 0; head < h; ++head) {
    std::copy(mask.data(), mask.data() + batch * per_batch, out.data() + head * batch * per_batch);
  }
  return out;
}

// [h*batch, seq_q, seq_k] (head-major) -> [batch, h, seq_q, seq_k].
template <class T>
xt::xarray<T> heads_second(const xt::xarray<T>& a, std::size_t h) {
  const std::size_t batch = a.shape()[0] / h, map = a.shape()[1] * a.shape()[2];
  auto out = xt::xarray<T>::from_shape({batch, h, a.shape()[1], a.shape()[2]});
  for (std::size_t head = 0; head < h; ++head)
    for (std::size_t b = 0; b < batch; ++b)
      std::copy(a.data() + (head * batch + b) * map, a.data() + (head * batch + b + 1) * map,
                out.data() + (b * h + head) * map);
  return out;
}

}  // namespace

template <class T>
MultiHeadAttention<T>::MultiHeadAttention(std::size_t d_model, std::size_t h, Generator& gen)
    : d_model_(d_model), h_(h), d_k_(head_width(d_model, h, "h")) {
  // Registered in the reference Transformer's order (W_k, W_q, W_v) so named_parameters() lists them as PyTorch does.
  const double bound = std::sqrt(6.0 / static_cast<double>(d_model + d_k_));  // xavier_uniform of one head
  for (auto [name, param] : {std::pair<const char*, Tensor<T>*>{"W_k", &W_k_}, {"W_q", &W_q_}, {"W_v", &W_v_}}) {
    this->register_parameter(name, *param, Tensor<T>::zeros({h, d_model, d_k_}));
    init::uniform_(*param, -bound, bound, gen);
  }
  scaled_dot_product_attention_ =
      this->register_module("scaled_dot_product_attention", std::make_shared<ScaledDotProductAttention<T>>(d_k_));
  linear_ = this->register_module("linear", std::make_shared<Linear<T>>(h * d_k_, d_model, gen));
  for (auto [name, point] : attention_hook_points(points_, *this)) this->register_hook_point(name, *point);
}

template <class T>
Tensor<T> MultiHeadAttention<T>::forward(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                         const std::optional<AttendMask>& mask_3d) {
  check_attention_inputs(AttentionFamily::kTransformer, d_model_, q, k, v, [this] { return probe_owner(); });
  const std::size_t batch = q.size(0), seq_q = q.size(1), seq_k = k.size(1);
  std::optional<AttendMask> heads_mask;
  if (mask_3d) {
    const auto& s = mask_3d->may_attend().shape();
    const auto fits = [](std::size_t m, std::size_t n) { return m == 1 || m == n; };
    if (s.size() != 3 || !fits(s[0], batch) || !fits(s[1], seq_q) || !fits(s[2], seq_k)) {
      throw ShapeError(probe_owner() + ": mask_3d " + format_shape(s) +
                       " must be [batch or 1, seq_q or 1, seq_k or 1] = [" + std::to_string(batch) + ", " +
                       std::to_string(seq_q) + ", " + std::to_string(seq_k) + "] for q " + q.describe() + ", k " +
                       k.describe() + ", v " + v.describe());
    }
    heads_mask = AttendMask(repeat_over_heads(mask_3d->may_attend(), h_));
  }
  const auto heads = static_cast<Index>(h_ * batch), d_k = static_cast<Index>(d_k_);
  // [batch, seq, d_model] x [h, d_model, d_k] -> [h, batch, seq, d_k] -> [h*batch, seq, d_k], each
  // tensor with its own sequence length.
  const auto project = [&](const Tensor<T>& x, const Tensor<T>& W) {
    return view(einsum("ijk,hkl->hijl", x, W), {heads, static_cast<Index>(x.size(1)), d_k});
  };
  // [h*batch, seq, d] (head-major) <-> [batch, h, seq, d], the layout of probes and hook points.
  const auto split = [h = static_cast<Index>(h_), b = static_cast<Index>(batch)](const Tensor<T>& x) {
    return permute(view(x, {h, b, static_cast<Index>(x.size(1)), static_cast<Index>(x.size(2))}), {1, 0, 2, 3});
  };
  const auto join = [heads](const Tensor<T>& x) {
    return reshape(permute(x, {1, 0, 2, 3}), {heads, static_cast<Index>(x.size(2)), static_cast<Index>(x.size(3))});
  };
  std::optional<ProbeStep<T>> probe;
  if (this->maps_observed()) {
    probe = [this, split, join, may_attend = broadcast_may_attend(mask_3d ? &mask_3d->may_attend() : nullptr, batch,
                                                                  seq_q, seq_k)](AttentionStage stage, const Tensor<T>& x) {
      return join(this->run_probes(stage, split(x), may_attend));
    };
  }
  const auto through = [&](const HookPoint<T>& point, const Tensor<T>& x) {
    return point.active() ? join(point(split(x))) : x;
  };
  Tensor<T> z = through(points_.z, (*scaled_dot_product_attention_)(
                                     through(points_.q, project(points_.q_input(q), W_q_)),
                                     through(points_.k, project(points_.k_input(k), W_k_)),
                                     through(points_.v, project(points_.v_input(v), W_v_)), heads_mask, probe ? &*probe : nullptr));
  if (points_.result.active()) return sum_of_head_results(points_.result(head_results(split(z), *linear_)), *linear_);
  // [h*batch, seq_q, d_k] -> [batch, seq_q, h*d_k], the heads side by side: the reference's
  // cat(chunk(z, h, 0), 2) as one permutation, whose backward is one too (chunk's scatters each
  // head's gradient into zeros of z's shape, and the h of them are added up).
  const auto h = static_cast<Index>(h_), b = static_cast<Index>(batch), s = static_cast<Index>(seq_q);
  return (*linear_)(reshape(permute(view(std::move(z), {h, b, s, d_k}), {1, 2, 0, 3}), {b, s, h * d_k}));
}

template <class T>
std::string MultiHeadAttention<T>::probe_owner() const {
  return "MultiHeadAttention(d_model=" + std::to_string(d_model_) + ", h=" + std::to_string(h_) + ")";
}

template <class T>
AttentionWeights<T> MultiHeadAttention<T>::attention_weights() const {
  const Tensor<T>& w = scaled_dot_product_attention_->last_weights();
  if (!w.defined()) throw ValueError("MultiHeadAttention: no attention weights before the first forward");
  AttentionWeights<T> out{heads_second(w.value(), h_), std::nullopt};
  if (w.has_grad()) out.grad = heads_second(w.grad(), h_);
  return out;
}

template class MultiHeadAttention<float>;
template class MultiHeadAttention<double>;

}  // namespace tapegrad::nn::transformer
