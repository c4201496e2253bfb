#include "autograd/ops/binary_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/layout/indices.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/ops/activation.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/pointwise.h"
#include "autograd/ops/reduce.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

template <class T> Tensor<T> constant(T v) { return Tensor<T>(xt::xarray<T>(v)); }

template <class T>
void require_same_shape(const char* op, const Tensor<T>& input, const char* input_name, const Tensor<T>& target) {
  require_defined(input, op, input_name);
  require_defined(target, op, "target");
  if (input.shape() != target.shape()) {
    throw ShapeError(std::string(op) + ": target " + format_shape(target.shape()) + " must have the shape of " +
                     input_name + " " + format_shape(input.shape()));
  }
}

// Only kl_div divides by the batch size.
void reject_batchmean(const char* op, Reduction reduction, const Shape& shape) {
  if (reduction == Reduction::BatchMean) {
    throw ValueError(std::string(op) + ": reduction BatchMean (input " + format_shape(shape) +
                     ") is only defined for kl_div; use Mean, Sum or None");
  }
}

// Checks that an optional per-element tensor (weight, pos_weight) broadcasts to the input.
template <class T>
void require_broadcasts(const char* op, const std::optional<Tensor<T>>& t, const char* name, const Tensor<T>& input,
                        const char* input_name) {
  if (!t) return;
  require_defined(*t, op, name);
  if (!kernels::broadcasts_to(t->shape(), input.shape())) {
    throw ShapeError(std::string(op) + ": " + name + " " + format_shape(t->shape()) + " does not broadcast to " +
                     input_name + " " + format_shape(input.shape()));
  }
}

// The losses rescaled by weight (when given), then reduced: Mean divides by the element count.
template <class T>
Tensor<T> reduce_losses(const Tensor<T>& losses, const std::optional<Tensor<T>>& weight, Reduction reduction) {
  const Tensor<T> weighted = weight ? mul(losses, *weight) : losses;
  if (reduction == Reduction::None) return weighted;
  return reduction == Reduction::Sum ? sum(weighted) : mean(weighted);
}

// PyTorch's clamped log: log(v), at least -100.
template <class T> T clamped_log(T v) { return std::max(std::log(v), T(-100)); }

// The unreduced binary cross-entropy, an op of its own for PyTorch's gradients (the 1e-12 floor
// and the clamp are not what differentiating the clamped logs would give).
template <class T> Tensor<T> bce_losses(const Tensor<T>& p, const Tensor<T>& t, CallSite where) {
  const T* pv = p.value().data();
  const T* tv = t.value().data();
  xt::xarray<T> out = xt::xarray<T>::from_shape(p.shape());
  T* o = out.data();
  // PyTorch's CPU kernel, term for term: (t - 1) max(log(1 - p), -100) - t max(log p, -100).
  kernels::parallel_items(out.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      o[i] = (tv[i] - T(1)) * clamped_log(T(1) - pv[i]) - tv[i] * clamped_log(pv[i]);
  });
  return make_result("binary_cross_entropy", where, std::move(out), should_record(p, t),
                     [p, t](const Tensor<T>& g) {
                       if (p.requires_grad()) {
                         const Tensor<T> floor = maximum(mul(p, rsub(p, T(1))), constant(T(1e-12)));
                         accumulate(p, div(mul(g, sub(p, t)), floor));
                       }
                       if (t.requires_grad()) accumulate(t, mul(g, sub(log(rsub(p, T(1))), log(p))));
                     });
}

// softplus(-x) = -log sigmoid(x) = max(-x, 0) + log1p(exp(-|x|)), without overflow; d/dx =
// sigmoid(x) - 1, through sigmoid so that it differentiates again.
template <class T> Tensor<T> neg_log_sigmoid(const Tensor<T>& x, CallSite where) {
  const T* xv = x.value().data();
  xt::xarray<T> out = xt::xarray<T>::from_shape(x.shape());
  T* o = out.data();
  kernels::parallel_items(out.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] = std::max(-xv[i], T(0)) + std::log1p(std::exp(-std::abs(xv[i])));
  });
  return make_result("binary_cross_entropy_with_logits", where, std::move(out), should_record(x),
                     [x](const Tensor<T>& g) { accumulate(x, mul(g, add(sigmoid(x), T(-1)))); });
}

}  // namespace

template <class T>
Tensor<T> binary_cross_entropy(const Tensor<T>& probs, const Tensor<T>& target, Reduction reduction,
                               const std::optional<Tensor<Scalar<T>>>& weight, CallSite where) {
  constexpr const char* op = "binary_cross_entropy";
  require_same_shape(op, probs, "probs", target);
  require_broadcasts(op, weight, "weight", probs, "probs");
  const T* pv = probs.value().data();
  for (std::size_t i = 0; i < probs.numel(); ++i) {
    if (!(pv[i] >= T(0) && pv[i] <= T(1))) {
      throw ValueError(std::string(op) + ": probs must lie in [0, 1], got " + format_number(pv[i]) +
                       " at position " + format_shape(kernels::unravel_index(i, probs.shape())) + " of probs " +
                       format_shape(probs.shape()));
    }
  }
  reject_batchmean(op, reduction, probs.shape());
  return reduce_losses(bce_losses(probs, target, where), weight, reduction);
}

template <class T>
Tensor<T> binary_cross_entropy_with_logits(const Tensor<T>& logits, const Tensor<T>& target, Reduction reduction,
                                           const std::optional<Tensor<Scalar<T>>>& pos_weight,
                                           const std::optional<Tensor<Scalar<T>>>& weight, CallSite where) {
  constexpr const char* op = "binary_cross_entropy_with_logits";
  require_same_shape(op, logits, "logits", target);
  reject_batchmean(op, reduction, logits.shape());
  require_broadcasts(op, pos_weight, "pos_weight", logits, "logits");
  require_broadcasts(op, weight, "weight", logits, "logits");
  // (1 - t) x + scale softplus(-x), scale = 1 + (w - 1) t.
  const Tensor<T> softplus_neg = neg_log_sigmoid(logits, where);
  const Tensor<T> scaled =
      pos_weight ? mul(add(mul(add(*pos_weight, T(-1)), target), T(1)), softplus_neg) : softplus_neg;
  const Tensor<T> losses = add(mul(rsub(target, T(1)), logits), scaled);
  return reduce_losses(losses, weight, reduction);
}

#define TAPEGRAD_INSTANTIATE_BCE(T)                                                                      \
  template Tensor<T> binary_cross_entropy(const Tensor<T>&, const Tensor<T>&, Reduction,                \
                                          const std::optional<Tensor<T>>&, CallSite);                    \
  template Tensor<T> binary_cross_entropy_with_logits(const Tensor<T>&, const Tensor<T>&, Reduction,    \
                                                      const std::optional<Tensor<T>>&,                  \
                                                      const std::optional<Tensor<T>>&, CallSite);
TAPEGRAD_INSTANTIATE_BCE(float)
TAPEGRAD_INSTANTIATE_BCE(double)

}  // namespace tapegrad
