#pragma once
// The measurement: one copy-task batch through the Transformer by study::capture_attention (under
// a GradientTape), the loss L = mean cross-entropy over the batch's target tokens (the training
// loss, without label smoothing), backward, then the attention maps A and their gradients dL/dA
// of every attention module, gradient norms per head and per sublayer, and the head-ablation
// table (study::head_ablation_table: the loss with each head's A zeroed, minus the clean loss).
//
// Per head h of an attention module (the capture's norms, over the batch's sequences; "cells" are
// the (query, key) pairs the mask lets attend, since a masked weight is exactly 0 and its dL/dA
// never reaches anything):
//   weights_grad = ||dL/dA[:, h]||                         over may-attend cells
//   scores_grad  = ||dL/dS[:, h]||                         over may-attend cells (S = the scaled,
//                  masked scores: the gradient that actually passes through the softmax into the head)
//   w_q, w_k, w_v = ||dL/dW_q[h]||, ||dL/dW_k[h]||, ||dL/dW_v[h]||   (the head's projections)
// Per sublayer (every parameter's gradient, grouped by the module that owns it: an attention
// module, an FFN, a LayerNorm, an embedding, the generator): the norm over its parameters. The
// Transformer does not expose its sublayer outputs (no hooks), so the gradient reaching a
// sublayer is measured on its parameters.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "study/attention_capture.h"
#include "study/attention_intervention.h"
#include "nn/copy_task/copy_task.h"
#include "nn/transformer/transformer.h"

namespace tapegrad::attention_study {

enum class AttentionKind { kEncoderSelf, kDecoderSelf, kDecoderCross };

// What the study differentiates, L, over the batch's target positions (teacher-forced):
//   kTargetLogit    the mean logit of the target token (the default: Chefer et al.'s target score,
//                   so that their rules and the gradient-weighted rollout, which keep the positive
//                   part of dL/dA * A, keep what raises it)
//   kTargetLogProb  the mean log-probability of the target token
//   kLoss           the training loss, mean cross-entropy: minus kTargetLogProb. On a trained
//                   model its gradient nearly vanishes, and its sign is the opposite of Chefer's.
enum class StudyMetric { kTargetLogit, kTargetLogProb, kLoss };

// L: one of the above, the mean over every target position or over the batch at one (`position`,
// counted from 0 over the target positions: the tokens after the start symbol).
struct MetricChoice {
  StudyMetric kind = StudyMetric::kTargetLogit;
  std::optional<std::size_t> position;
  MetricChoice(StudyMetric kind_ = StudyMetric::kTargetLogit, std::optional<std::size_t> position_ = std::nullopt)
      : kind(kind_), position(position_) {}
};

// "target logit", "target log-probability", "loss"; with a position, then " at target position 3".
std::string metric_name(const MetricChoice& metric);

// L of `batch` through the model, recorded when a tape is alive. ValueError naming the position and
// the count when the position is not one of the batch's target positions.
study::RunLoss<float> study_metric(nn::transformer::Transformer<float>& model, const copy_task::Batch& batch,
                                   const MetricChoice& metric);

// "encoder" or "decoder"
std::string stack_name(AttentionKind kind);
// "self-attention" or "source-target attention"
std::string attention_name(AttentionKind kind);

// One attention module's maps for the batch.
struct AttentionMaps {
  std::string module;  // "decoder.decoder_layers.0.src_tgt_attention"
  AttentionKind kind = AttentionKind::kEncoderSelf;
  std::string short_name;  // "enc0 self", "dec0 self", "dec0 cross": see head_name
  std::size_t layer = 0;
  xt::xarray<float> weights;      // [batch, heads, seq_q, seq_k], A
  xt::xarray<float> grad;         // [batch, heads, seq_q, seq_k], dL/dA
  xt::xarray<float> scores;       // [batch, heads, seq_q, seq_k], S (scaled, after the mask)
  xt::xarray<float> scores_grad;  // [batch, heads, seq_q, seq_k], dL/dS
  AttendMask may_attend;      // [batch, seq_q, seq_k], true = may attend
  IndexArray query_tokens;    // [batch, seq_q]
  IndexArray key_tokens;      // [batch, seq_k]
};

// The one name of a head, used by the page, the tables and the printed output: the module's
// short name and the head, "enc0 self h1", "dec1 cross h0".
std::string head_name(const std::string& short_name, std::size_t head);

// An attribution map of the study batch (study/attribution.h) over one stack's tokens.
struct AttributionMap {
  std::string name;         // "encoder rollout"
  std::string array_name;   // its name in the exports (export.h): "encoder.rollout"
  std::string description;  // one sentence: the method and the layers it combines
  xt::xarray<float> values; // [batch, seq, seq]: row i = output token, column j = input token
  IndexArray tokens;        // [batch, seq]
};

struct HeadGradNorms {
  std::string module, short_name;
  AttentionKind kind = AttentionKind::kEncoderSelf;
  std::size_t head = 0;
  double weights_grad = 0, scores_grad = 0, w_q = 0, w_k = 0, w_v = 0;
};

struct SublayerGradNorm {
  std::string name;  // "encoder.encoder_layers.0.ffn"
  double norm = 0;
  std::size_t parameters = 0;
};

struct StudyResult {
  MetricChoice metric;
  double metric_value = 0;  // L on the study batch
  double loss = 0;          // the training loss on the study batch (the head ablation's too)
  std::vector<AttentionMaps> maps;  // encoder layers, then decoder layers (self, then source-target)
  std::vector<HeadGradNorms> heads;
  std::vector<SublayerGradNorm> sublayers;  // in parameter registration order
  bool checks_passed = false;               // the capture's softmax-backward checks, every module
  study::HeadAblationTable ablation;        // modules in forward order
  // Rollout and gradient-weighted rollout over the encoder's self-attention layers and over the
  // decoder's self-attention layers (cross-attention maps are not square, so they do not chain).
  std::vector<AttributionMap> attributions;
  // The short name of the module at this dotted path (ValueError naming it when there is none).
  const std::string& short_name_of(const std::string& module) const;
  study::AttentionCapture<float> capture;   // all of it, for the exports (export.h)
};

// data [batch, seq]: copy-task sequences (copy_task::random_sequences). Every gradient of the
// study (dL/dA, dL/dS, the norms, the gradient-weighted maps) is of `metric`, L below. Puts the
// model in eval mode (no dropout) and leaves the batch's gradients of L in its parameters. Throws
// std::runtime_error when an attention module is named unlike the Transformer's.
StudyResult study_batch(nn::transformer::Transformer<float>& model, const IndexArray& data,
                        const MetricChoice& metric = {});

}  // namespace tapegrad::attention_study
