#include "examples/attention_study/study.h"

#include <cmath>
#include <regex>
#include <stdexcept>
#include <utility>

#include "examples/copy_task/copy_task.h"
#include "nn/attention_capture.h"
#include "nn/attention_intervention.h"

namespace tapegrad::attention_study {

namespace {

// One captured attention module's maps, named and given its tokens (the capture holds each
// module once: the copy task runs every module once per forward).
AttentionMaps describe(const nn::AttentionRecord<float>& record, const copy_task::Batch& batch) {
  static const std::regex pattern(
      R"((encoder|decoder)\.\1_layers\.(\d+)\.(multi_head_attention|self_attention|src_tgt_attention))");
  std::smatch m;
  if (!std::regex_match(record.name, m, pattern)) {
    throw std::runtime_error("attention_study: unexpected attention module name '" + record.name + "'");
  }
  AttentionMaps out{.may_attend = AttendMask(record.may_attend)};
  out.module = record.name;
  out.layer = std::stoul(m[2]);
  out.weights = record.weights;
  out.grad = record.weights_grad;
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
  const nn::RunLoss<float> run_loss = [&] { return copy_task::batch_loss(model, batch); };
  nn::AttentionCapture<float> capture = nn::capture_attention(model, run_loss);
  StudyResult result;
  result.loss = capture.loss;
  result.checks_passed = capture.checks_passed();
  for (const auto& record : capture.records) result.maps.push_back(describe(record, batch));  // forward order

  for (std::size_t n = 0; n < result.maps.size(); ++n) {
    const AttentionMaps& maps = result.maps[n];
    const auto& mha = attention_module(model, maps);
    for (std::size_t h = 0; h < maps.weights.shape()[1]; ++h) {
      HeadGradNorms norms{maps.module, maps.short_name, maps.kind, h};
      norms.weights_grad = capture.records[n].weights_grad_norm[h];
      norms.scores_grad = capture.records[n].scores_grad_norm[h];
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
  // After the gradients are read: the ablation runs add none (no tape).
  result.ablation = nn::head_ablation_table(model, run_loss);
  result.capture = std::move(capture);
  return result;
}

}  // namespace tapegrad::attention_study
