#include "study/attention_intervention.h"

#include <algorithm>
#include <map>

#include "autograd/ops/operators.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"
#include "autograd/base/checks.h"
#include "study/metric_without_tape.h"

namespace tapegrad::study {

namespace {

// Uniform weights over each query's may-attend keys, [batch, 1, seq_q, seq_k]; zeros for a fully masked row.
template <class T>
Tensor<T> uniform_over_allowed(const Mask& may_attend) {
  const auto& s = may_attend.shape();
  auto out = xt::xarray<T>::from_shape({s[0], std::size_t{1}, s[1], s[2]});
  for (std::size_t b = 0; b < s[0]; ++b) {
    for (std::size_t i = 0; i < s[1]; ++i) {
      std::size_t allowed = 0;
      for (std::size_t j = 0; j < s[2]; ++j) allowed += may_attend(b, i, j) ? 1 : 0;
      for (std::size_t j = 0; j < s[2]; ++j) out(b, 0, i, j) = may_attend(b, i, j) ? T(1) / T(allowed) : T(0);
    }
  }
  return Tensor<T>(std::move(out));
}

}  // namespace

template <class T>
void AttentionInterventions<T>::edit(const std::string& who, const std::string& module, std::size_t head,
                                     nn::AttentionStage stage, HeadEdit f) {
  nn::ProbedAttention<T>& site = attention_head_at(model_, module, head, who);
  const std::size_t heads = site.attention_heads();
  probes_.attach(site, [=](nn::AttentionStage at, const Tensor<T>& x,
                           const Mask& may_attend) -> std::optional<Tensor<T>> {
    if (at != stage) return std::nullopt;
    std::vector<Tensor<T>> pieces = chunk(x, heads, 1);  // heads pieces [batch, 1, seq_q, seq_k]
    pieces[head] = f(pieces[head], may_attend);
    return cat(pieces, 1);
  });
}

template <class T>
void AttentionInterventions<T>::ablate(const std::string& module, std::size_t head, Ablation kind) {
  if (kind == Ablation::kZero) {
    edit("AttentionInterventions::ablate", module, head, nn::AttentionStage::kWeights,
         [](const Tensor<T>& a, const Mask&) { return a * T(0); });
  } else {
    edit("AttentionInterventions::ablate", module, head, nn::AttentionStage::kWeights,
         [](const Tensor<T>&, const Mask& may_attend) { return uniform_over_allowed<T>(may_attend); });
  }
}

template <class T>
void AttentionInterventions<T>::scale(const std::string& module, std::size_t head, const Tensor<T>& factor,
                                      nn::AttentionStage stage) {
  require_defined(factor, "AttentionInterventions::scale", "factor");
  if (factor.ndim() != 0) {
    throw ShapeError("AttentionInterventions::scale: factor must be a 0-d tensor, got " + factor.describe());
  }
  edit("AttentionInterventions::scale", module, head, stage,
       [factor](const Tensor<T>& x, const Mask&) { return x * factor; });
}

template <class T>
void AttentionInterventions<T>::scale(const std::string& module, std::size_t head, double factor,
                                      nn::AttentionStage stage) {
  scale(module, head, Tensor<T>(xt::xarray<T>(static_cast<T>(factor))), stage);
}

template <class T>
void AttentionInterventions<T>::replace(const std::string& module, std::size_t head, const Tensor<T>& replacement,
                                        nn::AttentionStage stage) {
  require_defined(replacement, "AttentionInterventions::replace", "replacement");
  edit("AttentionInterventions::replace", module, head, stage,
       [=](const Tensor<T>& x, const Mask&) {
         const Shape wanted{x.size(0), x.size(2), x.size(3)};
         if (replacement.shape() != wanted) {
           throw ShapeError("AttentionInterventions::replace: the replacement of head " + std::to_string(head) +
                            " of '" + module + "' (" + nn::stage_name(stage) + ") is " + replacement.describe() +
                            " but must be [batch, seq_q, seq_k] = " + format_shape(wanted));
         }
         return reshape(replacement, {static_cast<Index>(x.size(0)), 1, static_cast<Index>(x.size(2)),
                                      static_cast<Index>(x.size(3))});
       });
}

template <class T>
double loss_change(nn::Module<T>& model, const RunLoss<T>& run_loss,
                   const std::type_identity_t<std::function<void(AttentionInterventions<T>&)>>& edit) {
  const double clean = metric_without_tape<T>(run_loss, "loss_change", "run_loss", "loss");
  AttentionInterventions<T> edits(model);
  edit(edits);
  return metric_without_tape<T>(run_loss, "loss_change", "run_loss", "loss") - clean;
}

template <class T>
HeadAblationTable head_ablation_table(nn::Module<T>& model, const RunLoss<T>& run_loss, Ablation kind) {
  HeadAblationTable table;
  // The clean run also finds the modules run_loss reaches, in forward order, and their head counts.
  std::vector<std::pair<std::string, std::size_t>> reached;
  {
    AttentionProbesGuard<T> probes;
    for (auto& [path, module] : named_attention_modules(model)) {
      probes.attach(*module, [&reached, path = path](nn::AttentionStage stage, const Tensor<T>& x,
                                                     const Mask&) -> std::optional<Tensor<T>> {
        const bool seen = std::any_of(reached.begin(), reached.end(), [&](const auto& r) { return r.first == path; });
        if (stage == nn::AttentionStage::kScores && !seen) reached.emplace_back(path, x.size(1));
        return std::nullopt;
      });
    }
    table.clean_loss = metric_without_tape<T>(run_loss, "head_ablation_table", "run_loss", "loss");
  }
  for (const auto& [path, heads] : reached) {
    for (std::size_t h = 0; h < heads; ++h) {
      AttentionInterventions<T> edits(model);
      edits.ablate(path, h, kind);
      const double loss = metric_without_tape<T>(run_loss, "head_ablation_table", "run_loss", "loss");
      table.rows.push_back({path, h, loss, loss - table.clean_loss});
    }
  }
  return table;
}

#define TAPEGRAD_INSTANTIATE_INTERVENTIONS(T)                                                                \
  template class AttentionInterventions<T>;                                                                  \
  template double loss_change(nn::Module<T>&, const RunLoss<T>&,                                             \
                              const std::type_identity_t<std::function<void(AttentionInterventions<T>&)>>&); \
  template HeadAblationTable head_ablation_table(nn::Module<T>&, const RunLoss<T>&, Ablation);
TAPEGRAD_INSTANTIATE_INTERVENTIONS(float)
TAPEGRAD_INSTANTIATE_INTERVENTIONS(double)

}  // namespace tapegrad::study
