#pragma once
// Integrated gradients over attention weights: Hao, Dong, Wei & Xu 2021, "Self-Attention
// Attribution: Interpreting Information Interactions Inside Transformer" (AAAI 2021): their
// attribution score Attr_h(A) and its Riemann approximation.
//
//   Attr(A) = A ⊙ ∫_0^1 ∂F(αA)/∂A dα  ≈  A ⊙ (1/m) Σ_{k=1}^{m} ∂F((k/m)·A)/∂A
//
// where F is the model's output (the loss, or one logit) as a function of the attention weights
// A of one layer with everything else held fixed, and ∂F(αA)/∂A is F's gradient evaluated at the
// scaled weights αA (the right Riemann sum with m steps, as in the paper, which uses m = 20).
// Completeness: sum(Attr) ≈ F(A) - F(0), the error shrinking like 1/m.
//
// attention: the layer's weights, any shape ([batch, heads, seq, seq] for one layer as captured;
// the paper scales all heads of a layer together and reads off one head's part). grad_at(alpha)
// must return ∂F/∂A at alpha·A, with attention's shape; it is called for alpha = 1/m, 2/m, ..., 1
// (in that order). Typically it runs the model with the layer's A replaced by alpha·A under a
// tape and returns the replaced A's gradient. Returns Attr(A), attention's shape.
//
// ValueError when steps is 0 or grad_at is empty; ShapeError naming alpha and both shapes when
// grad_at returns another shape.
#include <cstddef>
#include <functional>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

namespace tapegrad::study {

template <class T>
using AttentionGradientAt = std::function<xt::xarray<T>(T alpha)>;

template <class T>
xt::xarray<T> integrated_gradients(const xt::xarray<T>& attention, const AttentionGradientAt<T>& grad_at,
                                   std::size_t steps = 20);

}  // namespace tapegrad::study
