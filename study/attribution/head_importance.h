#pragma once
// Head importance from the gradient of a head mask: Michel, Levy & Neubig 2019, "Are Sixteen
// Heads Really Better than One?" (NeurIPS): the head importance score of their §4.1, with the
// per-layer L2 normalisation they describe there.
//
//   I_h = E_x | ∂L(x)/∂ξ_h |   at ξ = 1,
//
// where ξ_h multiplies head h's output: o_h = ξ_h · A_h V_h (before the output projection).
// Why A ⊙ dL/dA gives ∂L/∂ξ_h without a mask in the model: with G = ∂L/∂o_h [seq_q, d],
//   ∂L/∂ξ_h = Σ_{q,d} G[q,d] (A_h V_h)[q,d] = Σ_{q,k} A_h[q,k] Σ_d G[q,d] V_h[k,d]
//           = Σ_{q,k} A_h[q,k] (dL/dA_h)[q,k],
// since dL/dA_h = G V_h^T at ξ = 1. The same holds with dropout on A (elementwise and linear):
// A ⊙ dL/dA before dropout equals dropped(A) ⊙ dL/d(dropped A). So each sequence b gives
// ∂L/∂ξ_h = Σ_{q,k} A[b,h,q,k] · dL/dA[b,h,q,k]; the absolute value is taken per sequence, then
// averaged over the batch (E_x). One caveat: if L is the batch mean of per-sequence losses, each
// sequence's gradient carries a factor 1/batch, which scales every I_h alike (rankings, and the
// normalised scores, do not change).
//
// attention and gradients: forward order, [batch, heads, seq_q, seq_k] each (self- or
// cross-attention), the same number of heads in every layer. Returns [layers, heads].
// normalize_per_layer: divide each layer's scores by their L2 norm over the layer's heads, as the
// paper does before pruning across layers (a layer of all-zero scores stays zero).
// ValueError for an empty list or a different number of gradient maps; ShapeError for maps that
// are not 4-d, batch, seq or head counts that differ between layers, or a gradient whose shape
// differs from its map's.
#include <span>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

namespace tapegrad::study {

template <class T>
xt::xarray<T> head_importance(std::span<const xt::xarray<T>> attention, std::span<const xt::xarray<T>> gradients,
                              bool normalize_per_layer = false);

}  // namespace tapegrad::study
