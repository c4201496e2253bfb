#pragma once
// Attention probes: the hook points on the scores S and the weights A of every multi-head
// attention module (TransformerLens's hook_attn_scores and hook_pattern), in all three families.
//
// A probe is called during the forward with one tensor in ONE canonical layout,
// [batch, heads, seq_q, seq_k], whatever the family's own layout (labml computes
// [seq_q, seq_k, batch, heads], nn::transformer [heads*batch, seq_q, seq_k]), at each stage:
//   kScores   S = masked_fill(scale * q k^T, blocked, fill): after the mask, before the softmax
//             (fill is the family's: -inf for labml and nn::mha, lowest() for nn::transformer);
//   kWeights  A = softmax(S) over the keys, before dropout;
//   kDropped  dropout(A), only when dropout is active (training mode with p > 0).
// The canonical tensor is a differentiable permute/reshape of the family's on the tape, and the
// module continues from what the probe returns: nullopt keeps the tensor, a replacement (same
// shape, else ShapeError naming the module, the stage and both shapes) is used from then on, so
// gradients flow through it. Several probes run in registration order, each seeing the previous
// one's result. The probe also gets the may-attend mask broadcast to [batch, seq_q, seq_k] (all
// true without a mask); nn::mha, whose mask may vary per head, throws ValueError when a probed
// forward gets such a mask.
//
// Cost: without probes a forward is today's (nn::transformer keeps its fused attention_softmax;
// the others test one empty vector per stage). With one, nn::transformer runs the unfused
// composition S = masked_fill(scores * scale, blocked, lowest), A = softmax(S), equal to the
// fused op up to the rounding of the scale.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops/masking.h"
#include "autograd/core/tensor.h"
#include "nn/hook_point.h"

namespace tapegrad::nn {

enum class AttentionStage { kScores, kWeights, kDropped };

// "scores", "weights", "dropped weights": how a stage is named in messages.
std::string stage_name(AttentionStage stage);

// probe(stage, x [batch, heads, seq_q, seq_k], may_attend [batch, seq_q, seq_k]) -> replacement or nullopt.
template <class T>
using AttentionProbe =
    std::function<std::optional<Tensor<T>>(AttentionStage stage, const Tensor<T>& x, const Mask& may_attend)>;

// What a family's forward calls at each stage, in the family's own layout (it converts to and
// from the canonical one); built by the module only when it has probes.
template <class T>
using ProbeStep = std::function<Tensor<T>(AttentionStage stage, const Tensor<T>& x)>;

// The mixin every probed attention module inherits (next to Module<T>): the registry and the
// canonical-layout call. capture_attention and the interventions find modules by it.
template <class T>
class ProbedAttention {
 public:
  ProbedAttention() = default;
  virtual ~ProbedAttention() = default;
  // Not copyable: a copy would share lifetime() with the original.
  ProbedAttention(const ProbedAttention&) = delete;
  ProbedAttention& operator=(const ProbedAttention&) = delete;

  // Returns an id for remove_attention_probe; ValueError for an empty probe.
  std::uint64_t register_attention_probe(AttentionProbe<T> probe);
  // ValueError naming the module when it has no probe with that id.
  void remove_attention_probe(std::uint64_t id);
  bool has_attention_probes() const { return !probes_.empty(); }
  // ("hook_attn_scores", S) and ("hook_pattern", A): the maps as hook points, for the family to
  // register (attention_hook_points.h).
  std::vector<std::pair<std::string, HookPoint<T>*>> map_points() {
    return {{"hook_attn_scores", &scores_point_}, {"hook_pattern", &pattern_point_}};
  }
  // Whether a forward must produce S and A in the canonical layout: a probe, or a hook on
  // hook_attn_scores or hook_pattern.
  bool maps_observed() const { return has_attention_probes() || scores_point_.active() || pattern_point_.active(); }
  // The number of heads (the canonical layout's axis 1).
  virtual std::size_t attention_heads() const = 0;
  // Expires when this module is destroyed: what holds a probe id (AttentionProbesGuard, and so
  // interventions) checks it before detaching, so it may be destroyed after the module.
  std::weak_ptr<const void> lifetime() const { return lifetime_; }

 protected:
  // "MultiHeadAttention(heads=2, d_model=8)": the module in messages.
  virtual std::string probe_owner() const = 0;
  // Runs the probes on x (canonical) in registration order, then the stage's hook point (S:
  // hook_attn_scores, A: hook_pattern), and returns the tensor to continue with.
  Tensor<T> run_probes(AttentionStage stage, Tensor<T> x, const Mask& may_attend) const;

 private:
  HookPoint<T> scores_point_, pattern_point_;
  std::vector<std::pair<std::uint64_t, AttentionProbe<T>>> probes_;
  std::shared_ptr<const void> lifetime_ = std::make_shared<const char>(0);
};

// The probes' mask: may_attend, a [batch or 1, seq_q or 1, seq_k or 1] mask (a family's own mask
// with its axes put in this order), broadcast to [batch, seq_q, seq_k]; all true when null.
Mask broadcast_may_attend(const Mask* may_attend, std::size_t batch, std::size_t seq_q, std::size_t seq_k);

extern template class ProbedAttention<float>;
extern template class ProbedAttention<double>;

}  // namespace tapegrad::nn
