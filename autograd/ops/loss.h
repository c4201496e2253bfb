#pragma once
// Loss functions with PyTorch's definitions and defaults. Each loss's gradient is computed by a
// kernel of its own, in an op whose backward is written with tensor ops, so the gradient can be
// differentiated again (create_graph).

#include "autograd/core/tensor.h"

namespace tapegrad {

enum class Reduction {
  None,       // per-element losses, the target's shape
  Mean,       // mean over elements (over non-ignored targets for cross_entropy / nll_loss)
  Sum,
  BatchMean,  // kl_div only: sum divided by the first axis's size (PyTorch's 'batchmean')
};

// Class weights (PyTorch's weight=): a [C] tensor, one weight per class, or undefined for all 1.
// Target r's loss is scaled by weight[target_r] (0 for an ignored target), and Mean divides the
// sum by the summed weights of the kept targets instead of their count (0 when that sum is 0,
// as for a batch of ignored targets). Negative weights are accepted, as in PyTorch. The weight
// is a constant, as in PyTorch 1.13, which refuses to differentiate nll_loss in it: a weight
// that requires a gradient while the tape records is a ValueError (pass weight.detach()).
template <class T = double>
struct CrossEntropyOptions {
  Tensor<T> weight = {};         // [C] class weights; with label smoothing they weight its term too
  Index ignore_index = -100;     // targets equal to this contribute nothing and are not counted
  double label_smoothing = 0.0;  // in [0, 1]: target = (1 - s) * one_hot + s / C over all C classes
  Reduction reduction = Reduction::Mean;
};

template <class T = double>
struct NllLossOptions {
  Tensor<T> weight = {};  // [C] class weights, as CrossEntropyOptions::weight
  Index ignore_index = -100;
  Reduction reduction = Reduction::Mean;
};

// Class axis as in PyTorch: logits [C] with a scalar target, [N, C] with targets [N], or
// [N, C, d1, ...] with targets [N, d1, ...]. Targets are class indices in [0, C) or ignore_index.
// Computed through log-softmax with the row maximum subtracted, so masked and huge logits are
// exact as in PyTorch 1.13: a -inf logit has probability 0 ([1, -inf, 2], target 0: 1.3133), a
// target whose own logit is -inf gives inf, label smoothing > 0 with any -inf logit gives inf (the
// smoothing term averages every log-probability), and logits near 1e7 keep their precision in
// float. The gradient stays finite in all of these. A row whose logits are all -inf gives inf and
// no gradient (PyTorch: NaN; softmax.h's rule for fully masked rows).
// With class weights w and smoothing s the loss of a kept target t is, as PyTorch 1.13's,
//   (1 - s) w_t (-log p_t) + s / C * sum_c w_c (-log p_c).
template <class T> Tensor<T> cross_entropy(const Tensor<T>& logits, const IndexArray& targets, const CrossEntropyOptions<T>& options = {},
    CallSite where = std::source_location::current());
// Cross-entropy against class probabilities (PyTorch's float target): target has the logits'
// shape, and the loss of each position is -sum_c w_c q_c log p_c over the class axis, with
// q = (1 - s) target + s / C when label_smoothing s > 0 and w the class weights (1 without).
// Mean divides by the number of positions (N * d1 * ..., not by the weights: PyTorch 1.13), 0 for
// none. Differentiable in logits, target and weight to any order, as PyTorch's composite. A -inf
// logit with a target probability 0 gives NaN, as PyTorch (0 * -inf). ignore_index does not apply:
// any value but the default -100 is a ValueError, as PyTorch's.
template <class T> Tensor<T> cross_entropy(const Tensor<T>& logits, const Tensor<T>& target, const CrossEntropyOptions<T>& options = {},
    CallSite where = std::source_location::current());
// Negative log-likelihood of log-probabilities, same shapes as cross_entropy. A -inf
// log-probability is fine except at the target, where the loss is inf (as PyTorch).
// With class weights the loss of a kept target t is -w_t log_probs_t.
template <class T> Tensor<T> nll_loss(const Tensor<T>& log_probs, const IndexArray& targets, const NllLossOptions<T>& options = {},
    CallSite where = std::source_location::current());
// KL divergence with input as log-probabilities and target as probabilities (torch's KLDivLoss,
// log_target = false): target * (log target - input), 0 where target == 0 whatever the input,
// -inf included (PyTorch 1.13 gives NaN there, 0 * -inf), with gradients 0 there; the mixed
// second derivative d2/dinput dtarget there is the one at a positive target (-1 for a summed
// loss) in either order, as PyTorch's, and d2/dtarget2 is 0 (PyTorch: NaN). Same shapes.
// log_target = true takes the target as log-probabilities too: exp(target) * (target - input),
// differentiable in both to any order; by the same rule a target of -inf (probability 0) gives 0
// and no gradient (PyTorch 1.13: NaN).
template <class T> Tensor<T> kl_div(const Tensor<T>& log_input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
    bool log_target = false, CallSite where = std::source_location::current());
template <class T> Tensor<T> mse_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
