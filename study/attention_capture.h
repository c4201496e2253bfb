#pragma once
// capture_attention: one call that runs a batch under a tape and returns, for every attention
// module of a model (the three MultiHeadAttention families), its scores S, weights A and both
// gradients dL/dS and dL/dA, with the softmax-backward identity checked, not assumed.
//
//   auto capture = study::capture_attention<float>(model, [&] { return copy_task::batch_loss(model, batch); });
//   for (const auto& r : capture.records) ...  // r.name, r.weights, r.scores_grad, r.check.passed
//
// Every array is [batch, heads, seq_q, seq_k] (the probes' canonical layout, nn/attention_probe.h)
// whatever the family's own layout; the mask is [batch, seq_q, seq_k], true = may attend.
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/ops/masking.h"
#include "autograd/core/tensor.h"
#include "nn/module.h"

namespace tapegrad::study {

// The softmax-backward checks of one attention call. A row is a (batch, head, query) triple.
//   identity_error: max over cells of |dS - A ⊙ (dA - rowsum(A ⊙ dA))| / R, R the row's scale
//     max_j A_j (|dA_j| + sum_k |A_k dA_k|): the deviation in units of the magnitudes the backward
//     rounded. The tape computes dS in T; the row sum of seq_k products is off by at most about
//     seq_k eps R, the product and difference by a few eps R more, so tolerance = 8 (seq_k + 2) eps
//     (eps of T), which leaves a factor of about 8 for the order of summation;
//   masked_grad: max |dS| over masked cells of rows with at least one may-attend key; must be
//     exactly 0 (the weight there is exactly 0, so the softmax passes no gradient);
//   row_sum_error: max |sum_j A_j - 1| over rows with at least one may-attend key, same tolerance.
// Fully masked rows are counted, not checked for the mask and the sum: labml and nn::mha give
// them all-zero weights (tapegrad's softmax of an all -inf row), nn::transformer uniform weights
// 1/seq_k (its finite fill value), and there dS at the masked cells need not be 0.
struct SoftmaxBackwardCheck {
  double identity_error = 0;
  double masked_grad = 0;
  double row_sum_error = 0;
  double tolerance = 0;
  std::size_t fully_masked_rows = 0;
  bool passed = false;
};

// The checks above for A, dA, dS [batch, heads, seq_q, seq_k] and may_attend [batch, seq_q, seq_k].
// ShapeError naming check_softmax_backward, the argument and the shapes when they do not fit.
template <class T>
SoftmaxBackwardCheck check_softmax_backward(const xt::xarray<T>& weights, const xt::xarray<T>& weights_grad,
                                            const xt::xarray<T>& scores_grad, const Mask& may_attend);

// What runs the batch forward and returns the single-element loss. Not deduced, so a lambda can
// be passed and T comes from the model.
template <class T>
using RunLoss = std::type_identity_t<std::function<Tensor<T>()>>;

// One call of one attention module in the forward.
template <class T>
struct AttentionRecord {
  // The module's dotted path for its first call in the forward, then "path#2", "path#3", ... for
  // a module run again in the same forward (call = 1, 2, ...).
  std::string name;
  std::string module;
  std::size_t call = 0;
  xt::xarray<T> scores, weights;                 // S (after the mask), A (after the softmax, before dropout)
  std::optional<xt::xarray<T>> dropped_weights;  // A after dropout, when dropout was active (training)
  xt::xarray<T> scores_grad, weights_grad;       // dL/dS, dL/dA (zeros where the loss does not reach)
  Mask may_attend;                               // [batch, seq_q, seq_k]
  // Per head: the norm of dL/dS and of dL/dA over the may-attend cells of every (batch, query).
  std::vector<double> scores_grad_norm, weights_grad_norm;
  SoftmaxBackwardCheck check;
};

template <class T>
struct AttentionCapture {
  double loss = 0;
  std::vector<AttentionRecord<T>> records;  // in forward order (the order the modules ran)
  // The record named `name`; ValueError listing the names when there is none.
  const AttentionRecord<T>& at(const std::string& name) const;
  bool checks_passed() const;
};

// Attaches a probe to every attention module under model (study/attention_sites.h), opens its own
// GradientTape, calls run_loss (which runs the batch forward and returns the single-element loss;
// it must not call backward itself), runs backward, detaches the probes (also when anything
// throws) and returns the records. Probes already registered (interventions) run before the
// capture's, so the capture sees what the model then uses. As any backward, it adds the batch's
// gradients into the parameters' grad(). ValueError when the loss has more than one element or
// requires no gradient (a constant, or computed under NoGradGuard or from detached values: it
// must depend on what run_loss ran on the capture's tape). Under a NoGradGuard it works as
// anywhere: the capture's own tape records (a tape made inside a guard does, autograd/core/tape.h).
template <class T>
AttentionCapture<T> capture_attention(nn::Module<T>& model, const RunLoss<T>& run_loss);

extern template struct AttentionCapture<float>;
extern template struct AttentionCapture<double>;

}  // namespace tapegrad::study
