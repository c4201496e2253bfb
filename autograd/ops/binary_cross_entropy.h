#pragma once
// Binary cross-entropy as PyTorch 1.13 defines it (torch.nn.functional.binary_cross_entropy and
// binary_cross_entropy_with_logits), reduced by sum, mean or not at all (Reduction, loss.h).
#include <optional>

#include "autograd/ops/loss.h"
#include "autograd/core/tensor.h"

namespace tapegrad {

// -(t log p + (1 - t) log(1 - p)) per element, each log clamped below at -100 as PyTorch does,
// so p = 0 or 1 gives a finite loss (p 1, t 0.5: 50). probs and target have the same shape (else
// ShapeError) and every prob lies in [0, 1] (else ValueError; NaN included). Gradients, as
// PyTorch's: d/dp = (p - t) / max(p (1 - p), 1e-12) (0 at p = t = 0), d/dt = log(1 - p) - log(p)
// (unclamped: inf at p = 0). Reduction::BatchMean is a ValueError.
// weight (PyTorch's weight=) rescales each element's loss before the reduction (Mean still
// divides by the element count); it broadcasts to the probs' shape (else ShapeError), may be
// negative, and is differentiable (PyTorch 1.13: not, it refuses a weight requiring a gradient).
template <class T> Tensor<T> binary_cross_entropy(const Tensor<T>& probs, const Tensor<T>& target,
    Reduction reduction = Reduction::Mean, const std::optional<Tensor<Scalar<T>>>& weight = std::nullopt,
    CallSite where = std::source_location::current());

// The same on logits x, in the stable form: (1 - t) x + (1 + (w - 1) t) softplus(-x), with w the
// pos_weight (1 when absent), which broadcasts to the logits' shape (else ShapeError); logits and
// target have the same shape. Finite for any finite x (x = -1000, t = 1: 1000). Differentiable in
// logits, target and pos_weight (PyTorch 1.13: not pos_weight) to any order; d/dx =
// (1 + (w - 1) t) sigmoid(x) - w t. weight rescales each element's loss, as binary_cross_entropy's
// (and is differentiable; PyTorch 1.13: not). Neither is deduced: a Tensor<T> converts to it.
template <class T> Tensor<T> binary_cross_entropy_with_logits(const Tensor<T>& logits, const Tensor<T>& target,
    Reduction reduction = Reduction::Mean, const std::optional<Tensor<Scalar<T>>>& pos_weight = std::nullopt,
    const std::optional<Tensor<Scalar<T>>>& weight = std::nullopt, CallSite where = std::source_location::current());

}  // namespace tapegrad
