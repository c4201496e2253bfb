#pragma once
// Loss functions with PyTorch's definitions and defaults. Each loss's gradient is computed by a
// kernel of its own, in an op whose backward is written with tensor ops, so the gradient can be
// differentiated again (create_graph).

#include "autograd/tensor.h"

namespace tapegrad {

enum class Reduction {
  None,       // per-element losses, the target's shape
  Mean,       // mean over elements (over non-ignored targets for cross_entropy / nll_loss)
  Sum,
  BatchMean,  // kl_div only: sum divided by the first axis's size (PyTorch's 'batchmean')
};

struct CrossEntropyOptions {
  Index ignore_index = -100;     // targets equal to this contribute nothing and are not counted
  double label_smoothing = 0.0;  // in [0, 1]: target = (1 - s) * one_hot + s / C over all C classes
  Reduction reduction = Reduction::Mean;
};

struct NllLossOptions {
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
template <class T> Tensor<T> cross_entropy(const Tensor<T>& logits, const IndexArray& targets, const CrossEntropyOptions& options = {},
    CallSite where = std::source_location::current());
// Negative log-likelihood of log-probabilities, same shapes as cross_entropy. A -inf
// log-probability is fine except at the target, where the loss is inf (as PyTorch).
template <class T> Tensor<T> nll_loss(const Tensor<T>& log_probs, const IndexArray& targets, const NllLossOptions& options = {},
    CallSite where = std::source_location::current());
// KL divergence with input as log-probabilities and target as probabilities (torch's KLDivLoss,
// log_target = false): target * (log target - input), 0 where target == 0 whatever the input,
// -inf included (PyTorch 1.13 gives NaN there, 0 * -inf), with gradients 0 there. Same shapes.
template <class T> Tensor<T> kl_div(const Tensor<T>& log_input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
    CallSite where = std::source_location::current());
template <class T> Tensor<T> mse_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
