#pragma once
// Loss functions with PyTorch's definitions and defaults.

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
template <class T> Tensor<T> cross_entropy(const Tensor<T>& logits, const IndexArray& targets, const CrossEntropyOptions& options = {},
    CallSite where = std::source_location::current());
// Negative log-likelihood of log-probabilities, same shapes as cross_entropy.
template <class T> Tensor<T> nll_loss(const Tensor<T>& log_probs, const IndexArray& targets, const NllLossOptions& options = {},
    CallSite where = std::source_location::current());
// KL divergence with input as log-probabilities and target as probabilities (torch's KLDivLoss,
// log_target = false): target * (log target - input), 0 where target == 0. Same shapes.
template <class T> Tensor<T> kl_div(const Tensor<T>& log_input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
    CallSite where = std::source_location::current());
template <class T> Tensor<T> mse_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
