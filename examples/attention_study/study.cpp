#include "examples/attention_study/study.h"

#include <cmath>
#include <regex>
#include <stdexcept>

#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "examples/copy_task/copy_task.h"

namespace tapegrad::attention_study {

namespace {

// [batch, 1 or seq_q, seq_k] -> [batch, seq_q, seq_k]
AttendMask expand_mask(const AttendMask& attend, std::size_t seq_q) {
  const Mask& mask = attend.may_attend();
  const std::size_t batch = mask.shape()[0], seq_k = mask.shape()[2];
  Mask out = Mask::from_shape({batch, seq_q, seq_k});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < seq_q; ++i)
      for (std::size_t j = 0; j < seq_k; ++j) out(b, i, j) = mask(b, mask.shape()[1] == 1 ? 0 : i, j);
  return AttendMask(std::move(out));
}

AttentionMaps describe(const std::string& module, nn::transformer::AttentionWeights<float> attention,
                       const copy_task::Batch& batch) {
  static const std::regex pattern(
      R"((encoder|decoder)\.\1_layers\.(\d+)\.(multi_head_attention|self_attention|src_tgt_attention))");
  std::smatch m;
  if (!std::regex_match(module, m, pattern)) {
    throw std::runtime_error("attention_study: unexpected attention module name '" + module + "'");
  }
  if (!attention.grad) throw std::runtime_error("attention_study: no gradient reached '" + module + "'");
  const std::size_t seq_q = attention.weights.shape()[2];
  const bool decoder_self = m[1] == "decoder" && m[3] == "self_attention";
  AttentionMaps out{.may_attend = decoder_self ? batch.tgt_mask : expand_mask(batch.src_mask, seq_q)};
  out.module = module;
  out.layer = std::stoul(m[2]);
  out.weights = std::move(attention.weights);
  out.grad = std::move(*attention.grad);
  const std::string layer = std::to_string(out.layer);
  if (m[1] == "encoder") {
    out.kind = AttentionKind::kEncoderSelf;
    out.short_name = "enc" + layer + " self";
    out.query_tokens = out.key_tokens = batch.src;
  } else if (m[3] == "self_attention") {
    out.kind = AttentionKind::kDecoderSelf;
    out.short_name = "dec" + layer + " self";
    out.query_tokens = out.key_tokens = batch.tgt_in;
  } else {
    out.kind = AttentionKind::kDecoderCross;
    out.short_name = "dec" + layer + " cross";
    out.query_tokens = batch.tgt_in;
    out.key_tokens = batch.src;
  }
  return out;
}

// ||dL/dA[:, h]|| over may-attend cells and ||dL/dS[:, h]|| (see study.h).
void attention_grad_norms(const AttentionMaps& maps, std::size_t head, HeadGradNorms& out) {
  const auto& s = maps.weights.shape();
  double weights_sq = 0, scores_sq = 0;
  for (std::size_t b = 0; b < s[0]; ++b) {
    for (std::size_t i = 0; i < s[2]; ++i) {
      double row_dot = 0;  // sum_k A dL/dA
      for (std::size_t j = 0; j < s[3]; ++j) row_dot += double(maps.weights(b, head, i, j)) * maps.grad(b, head, i, j);
      for (std::size_t j = 0; j < s[3]; ++j) {
        const double a = maps.weights(b, head, i, j), g = maps.grad(b, head, i, j);
        if (maps.may_attend.may_attend()(b, i, j)) weights_sq += g * g;
        const double ds = a * (g - row_dot);
        scores_sq += ds * ds;
      }
    }
  }
  out.weights_grad = std::sqrt(weights_sq);
  out.scores_grad = std::sqrt(scores_sq);
}

double sum_of_squares(const float* p, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += double(p[i]) * p[i];
  return s;
}

// ||dL/dW[h]|| for W [heads, d_model, d_k]; 0 when no gradient reached W.
double head_slice_norm(const Tensor<float>& W, std::size_t head) {
  if (!W.has_grad()) return 0;
  const std::size_t per_head = W.value().size() / W.shape()[0];
  return std::sqrt(sum_of_squares(W.grad().data() + head * per_head, per_head));
}

const nn::transformer::MultiHeadAttention<float>& attention_module(const nn::transformer::Transformer<float>& model,
                                                                   const AttentionMaps& maps) {
  if (maps.kind == AttentionKind::kEncoderSelf)
    return model.encoder().encoder_layers()[maps.layer].multi_head_attention();
  const auto& layer = model.decoder().decoder_layers()[maps.layer];
  return maps.kind == AttentionKind::kDecoderSelf ? layer.self_attention() : layer.src_tgt_attention();
}

// "encoder.encoder_layers.0.ffn.linear_1.weight" -> "encoder.encoder_layers.0.ffn"; outside the
// layer stacks the first two components ("encoder.embedding", "generator.proj").
std::string sublayer_of(const std::string& parameter) {
  static const std::regex in_layer(R"(^(.*_layers\.\d+\.[^.]+)\..*$)");
  static const std::regex outside(R"(^([^.]+\.[^.]+)\..*$)");
  std::smatch m;
  if (std::regex_match(parameter, m, in_layer) || std::regex_match(parameter, m, outside)) return m[1];
  return parameter;
}

}  // namespace

std::string stack_name(AttentionKind kind) { return kind == AttentionKind::kEncoderSelf ? "encoder" : "decoder"; }

std::string attention_name(AttentionKind kind) {
  return kind == AttentionKind::kDecoderCross ? "source-target attention" : "self-attention";
}

StudyResult study_batch(nn::transformer::Transformer<float>& model, const IndexArray& data) {
  const copy_task::Batch batch = copy_task::make_batch(data);
  model.eval();
  model.zero_grad();
  StudyResult result;
  {
    GradientTape tape;
    const Tensor<float> loss = copy_task::batch_loss(model, batch);
    result.loss = loss.item();
    tape.backward(loss);
  }

  std::vector<AttentionMaps> encoder, decoder;
  for (auto& [name, attention] : model.attention_weights()) {
    AttentionMaps maps = describe(name, std::move(attention), batch);
    (maps.kind == AttentionKind::kEncoderSelf ? encoder : decoder).push_back(std::move(maps));
  }
  result.maps = std::move(encoder);
  for (auto& maps : decoder) result.maps.push_back(std::move(maps));

  for (const AttentionMaps& maps : result.maps) {
    const auto& mha = attention_module(model, maps);
    for (std::size_t h = 0; h < maps.weights.shape()[1]; ++h) {
      HeadGradNorms norms{maps.module, maps.short_name, maps.kind, h};
      attention_grad_norms(maps, h, norms);
      norms.w_q = head_slice_norm(mha.W_q(), h);
      norms.w_k = head_slice_norm(mha.W_k(), h);
      norms.w_v = head_slice_norm(mha.W_v(), h);
      result.heads.push_back(norms);
    }
  }

  for (const auto& [name, p] : model.named_parameters()) {
    const std::string sublayer = sublayer_of(name);
    if (result.sublayers.empty() || result.sublayers.back().name != sublayer) result.sublayers.push_back({sublayer});
    SublayerGradNorm& s = result.sublayers.back();
    // Accumulate squares in `norm`, rooted below once every parameter is in.
    if (p.has_grad()) s.norm += sum_of_squares(p.grad().data(), p.grad().size());
    s.parameters += p.value().size();
  }
  for (auto& s : result.sublayers) s.norm = std::sqrt(s.norm);
  return result;
}

}  // namespace tapegrad::attention_study
