#pragma once
// Interventions on one head of one attention module, under the tape: ablate, scale or replace the
// head's weights A (or scores S) in every forward while the AttentionInterventions object lives,
// with gradients flowing through the replacement; and the change in loss they cause.
//
//   study::AttentionInterventions<float> edits(model);
//   edits.ablate("encoder.encoder_layers.0.multi_head_attention", 1);   // A[:, 1] := 0
//   const double dL = study::loss_change<float>(model, run_loss, [](auto& e) { e.scale("...", 0, 0.5); });
//
// Module paths and heads are those of study/attention_sites.h and the canonical layout
// [batch, heads, seq_q, seq_k] (nn/attention_probe.h). An edit applies to every call of its
// module in a forward (a module run twice is edited twice). The edited head is one piece of a
// chunk/cat along the heads axis: the other heads pass unchanged, and scaling by exactly 1 leaves
// every value, and so the loss, bit for bit as it was. Edits add up in the order they were made:
// two scale()s of one head multiply, a replace() after an ablate() wins; several
// AttentionInterventions objects on one model apply in the order they made their edits.
//
// Lifetime: the edits end with the object, which may be destroyed before or after the model (a
// model destroyed first takes its edits with it). Making new edits needs the model alive: the
// object keeps a reference to it, as a std::ranges view does to its range.
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "study/attention_capture.h"
#include "study/attention_sites.h"

namespace tapegrad::study {

// kZero: A_h := 0 (the head contributes nothing). kUniform: A_h := uniform weights over the
// may-attend keys of each query, 1/(number of them), the head's average behaviour without its
// content; a fully masked row gets zeros. Neither is TransformerLens's mean ablation (a head's
// activation averaged over a dataset): that is patch_slices from mean_cache
// (study/activation_patching.h).
enum class Ablation { kZero, kUniform };

template <class T>
class AttentionInterventions {
 public:
  explicit AttentionInterventions(nn::Module<T>& model) : model_(model) {}

  // Each: ValueError naming the function, the path and the known paths for an unknown module,
  // or the head and the module's head count for a head out of range.
  void ablate(const std::string& module, std::size_t head, Ablation kind = Ablation::kZero);
  // x_h := factor * x_h, x the weights (or the scores, stage kScores). factor is a 0-d tensor: a
  // leaf that requires grad gets dL/dfactor. ShapeError naming scale and factor's shape otherwise.
  void scale(const std::string& module, std::size_t head, const Tensor<T>& factor,
             nn::AttentionStage stage = nn::AttentionStage::kWeights);
  void scale(const std::string& module, std::size_t head, double factor,
             nn::AttentionStage stage = nn::AttentionStage::kWeights);
  // x_h := replacement [batch, seq_q, seq_k] (gradients flow into it when it requires grad).
  // ShapeError naming replace, the module, the head and both shapes when, in a forward, it is not
  // the head's [batch, seq_q, seq_k].
  void replace(const std::string& module, std::size_t head, const Tensor<T>& replacement,
               nn::AttentionStage stage = nn::AttentionStage::kWeights);

 private:
  // f(head's piece [batch, 1, seq_q, seq_k], may_attend) -> its replacement
  using HeadEdit = std::function<Tensor<T>(const Tensor<T>&, const Mask&)>;
  void edit(const std::string& who, const std::string& module, std::size_t head, nn::AttentionStage stage, HeadEdit f);

  nn::Module<T>& model_;
  AttentionProbesGuard<T> probes_;
};

// loss(run_loss with edit's interventions) - loss(run_loss), both run with no gradient recorded.
// run_loss returns the single-element loss (ValueError otherwise).
template <class T>
double loss_change(nn::Module<T>& model, const RunLoss<T>& run_loss,
                   const std::type_identity_t<std::function<void(AttentionInterventions<T>&)>>& edit);

struct HeadAblation {
  std::string module;  // dotted path
  std::size_t head = 0;
  double loss = 0;    // with the head ablated
  double change = 0;  // loss - clean_loss
};

struct HeadAblationTable {
  double clean_loss = 0;
  std::vector<HeadAblation> rows;  // modules in forward order (first call), heads in order
};

// Every (module, head) of the attention modules run_loss reaches, ablated one at a time.
template <class T>
HeadAblationTable head_ablation_table(nn::Module<T>& model, const RunLoss<T>& run_loss,
                                      Ablation kind = Ablation::kZero);

extern template class AttentionInterventions<float>;
extern template class AttentionInterventions<double>;

}  // namespace tapegrad::study
