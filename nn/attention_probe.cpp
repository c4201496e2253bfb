#include "nn/attention_probe.h"

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xbuilder.hpp>

#include "autograd/base/callback_ids.h"

namespace tapegrad::nn {

std::string stage_name(AttentionStage stage) {
  switch (stage) {
    case AttentionStage::kScores: return "scores";
    case AttentionStage::kWeights: return "weights";
    case AttentionStage::kDropped: return "dropped weights";
  }
  return "unknown stage";
}

Mask broadcast_may_attend(const Mask* may_attend, std::size_t batch, std::size_t seq_q, std::size_t seq_k) {
  const std::vector<std::size_t> shape{batch, seq_q, seq_k};
  if (may_attend == nullptr) return Mask(xt::ones<bool>(shape));
  return Mask(xt::broadcast(*may_attend, shape));
}

template <class T>
std::uint64_t ProbedAttention<T>::register_attention_probe(AttentionProbe<T> probe) {
  if (!probe) throw ValueError(probe_owner() + ": register_attention_probe: the probe is empty");
  return add_callback(probes_, std::move(probe));
}

template <class T>
void ProbedAttention<T>::remove_attention_probe(std::uint64_t id) {
  if (!remove_callback(probes_, id)) {
    throw ValueError(probe_owner() + ": remove_attention_probe: no probe with id " + std::to_string(id));
  }
}

template <class T>
Tensor<T> ProbedAttention<T>::run_probes(AttentionStage stage, Tensor<T> x, const Mask& may_attend) const {
  // A copy: a probe that registers or removes probes changes the next forward, not this one.
  const auto probes = probes_;
  for (const auto& [id, probe] : probes) {
    std::optional<Tensor<T>> replacement = probe(stage, x, may_attend);
    if (!replacement) continue;
    if (!replacement->defined() || replacement->shape() != x.shape()) {
      throw ShapeError(probe_owner() + ": an attention probe replaced the " + stage_name(stage) + " " +
                       format_shape(x.shape()) + " [batch, heads, seq_q, seq_k] by " +
                       (replacement->defined() ? format_shape(replacement->shape()) : std::string("an undefined tensor")));
    }
    x = std::move(*replacement);
  }
  if (stage == AttentionStage::kScores) return scores_point_(std::move(x));
  if (stage == AttentionStage::kWeights) return pattern_point_(std::move(x));
  return x;
}

template class ProbedAttention<float>;
template class ProbedAttention<double>;

}  // namespace tapegrad::nn
