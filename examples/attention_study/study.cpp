#include "examples/attention_study/study.h"

#include <cmath>
#include <cstdio>
#include <regex>
#include <stdexcept>
#include <utility>

#include <xtensor/xview.hpp>

#include "autograd/base/errors.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/shape.h"
#include "nn/copy_task/copy_task.h"
#include "study/attention_capture.h"
#include "study/attention_intervention.h"
#include "study/attribution.h"
#include "study/metric_without_tape.h"
#include "study/metrics.h"

namespace tapegrad::attention_study {

namespace {

// One captured attention module's maps, named and given its tokens (the capture holds each
// module once: the copy task runs every module once per forward).
AttentionMaps describe(const study::AttentionRecord<float>& record, const copy_task::Batch& batch) {
  static const std::regex pattern(
      R"((encoder|decoder)\.\1_layers\.(\d+)\.(multi_head_attention|self_attention|src_tgt_attention))");
  std::smatch m;
  if (!std::regex_match(record.name, m, pattern)) {
    throw std::runtime_error("attention_study: unexpected attention module name '" + record.name + "'");
  }
  const std::size_t layer = std::stoul(m[2]);
  const AttentionKind kind = m[1] == "encoder"           ? AttentionKind::kEncoderSelf
                             : m[3] == "self_attention" ? AttentionKind::kDecoderSelf
                                                        : AttentionKind::kDecoderCross;
  static constexpr const char* kShortNames[] = {"enc%zu self", "dec%zu self", "dec%zu cross"};
  char short_name[32];
  std::snprintf(short_name, sizeof short_name, kShortNames[static_cast<int>(kind)], layer);
  // Queries: the source in the encoder, the decoder's input in the decoder; keys: the source,
  // except in the decoder's self-attention.
  const bool decoder = kind != AttentionKind::kEncoderSelf;
  return AttentionMaps{.module = record.name,
                       .kind = kind,
                       .short_name = short_name,
                       .layer = layer,
                       .weights = record.weights,
                       .grad = record.weights_grad,
                       .scores = record.scores,
                       .scores_grad = record.scores_grad,
                       .may_attend = AttendMask(record.may_attend),
                       .query_tokens = decoder ? batch.tgt_in : batch.src,
                       .key_tokens = kind == AttentionKind::kDecoderSelf ? batch.tgt_in : batch.src};
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

// Rollout and gradient-weighted rollout over the maps of one kind, in forward order; none when
// the model has no such module.
void add_rollouts(const StudyResult& study, AttentionKind kind, std::vector<AttributionMap>& out) {
  std::vector<xt::xarray<float>> attention, gradients;
  IndexArray tokens;
  for (const auto& maps : study.maps) {
    if (maps.kind != kind) continue;
    attention.push_back(maps.weights);
    gradients.push_back(maps.grad);
    tokens = maps.query_tokens;
  }
  if (attention.empty()) return;
  const std::string stack = stack_name(kind);
  const std::string layers = std::to_string(attention.size()) + " " + stack + " self-attention layers";
  out.push_back({stack + " rollout", stack + ".rollout",
                 "Attention rollout (Abnar & Zuidema 2020): product over the " + layers +
                     " of 0.5 mean_heads(A) + 0.5 I, later layers on the left; row = output token, column = input "
                     "token.",
                 study::attention_rollout<float>(attention), tokens});
  out.push_back({stack + " gradient-weighted rollout", stack + ".gradient_weighted_rollout",
                 "Gradient-weighted rollout (Chefer et al. 2021): product over the " + layers +
                     " of mean_heads(max(A dL/dA, 0)) + I, rows normalised.",
                 study::gradient_weighted_rollout<float>(attention, gradients), tokens});
}

}  // namespace

std::string head_name(const std::string& short_name, std::size_t head) {
  return short_name + " h" + std::to_string(head);
}

const std::string& StudyResult::short_name_of(const std::string& module) const {
  for (const auto& m : maps)
    if (m.module == module) return m.short_name;
  throw ValueError("StudyResult::short_name_of: no attention module '" + module + "' in the study");
}

std::string stack_name(AttentionKind kind) { return kind == AttentionKind::kEncoderSelf ? "encoder" : "decoder"; }

std::string attention_name(AttentionKind kind) {
  return kind == AttentionKind::kDecoderCross ? "source-target attention" : "self-attention";
}

std::string metric_name(const MetricChoice& metric) {
  const std::string at = metric.position ? " at target position " + std::to_string(*metric.position) : "";
  switch (metric.kind) {
    case StudyMetric::kTargetLogit: return "target logit" + at;
    case StudyMetric::kTargetLogProb: return "target log-probability" + at;
    case StudyMetric::kLoss: return "loss" + at;
  }
  return "unknown metric";
}

study::RunLoss<float> study_metric(nn::transformer::Transformer<float>& model, const copy_task::Batch& batch,
                                   const MetricChoice& metric) {
  const std::size_t targets = batch.tgt_out.shape()[1];
  if (metric.position && *metric.position >= targets) {
    throw ValueError("study_metric: target position " + std::to_string(*metric.position) + " is past the batch's " +
                     std::to_string(targets) + " target positions (0 to " + std::to_string(targets - 1) + ")");
  }
  if (metric.kind == StudyMetric::kLoss && !metric.position) {
    return [&model, &batch] { return copy_task::batch_loss(model, batch); };
  }
  // The generator is log_softmax(proj(x)): proj gives the logits. The loss at one position is
  // minus its target log-probability (the copy task pads nothing).
  auto& logits = dynamic_cast<nn::Linear<float>&>(model.get_submodule("generator.proj"));
  return [&model, &batch, &logits, metric] {
    const Tensor<float> out = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask);
    Tensor<float> scores = metric.kind == StudyMetric::kTargetLogit ? logits(out) : model.generator(out);
    IndexArray tokens = batch.tgt_out;
    if (metric.position) {
      const auto p = static_cast<Index>(*metric.position);
      scores = slice(scores, 1, p, p + 1);
      tokens = xt::view(batch.tgt_out, xt::all(), xt::range(p, p + 1));
    }
    const Tensor<float> mean = study::mean_score_at(scores, tokens);
    return metric.kind == StudyMetric::kLoss ? -mean : mean;
  };
}

StudyResult study_batch(nn::transformer::Transformer<float>& model, const IndexArray& data, const MetricChoice& metric) {
  const copy_task::Batch batch = copy_task::make_batch(data);
  model.eval();
  model.zero_grad();
  const study::RunLoss<float> run_loss = [&] { return copy_task::batch_loss(model, batch); };
  study::AttentionCapture<float> capture = study::capture_attention(model, study_metric(model, batch, metric));
  StudyResult result;
  result.metric = metric;
  result.metric_value = capture.loss;
  result.loss = study::metric_without_tape<float>(run_loss, "study_batch", "run_loss", "loss");
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
  result.ablation = study::head_ablation_table(model, run_loss);
  for (const AttentionKind kind : {AttentionKind::kEncoderSelf, AttentionKind::kDecoderSelf})
    add_rollouts(result, kind, result.attributions);
  result.capture = std::move(capture);
  return result;
}

}  // namespace tapegrad::attention_study
