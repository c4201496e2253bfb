#pragma once
// Attention rollout and its gradient-weighted variant: how much each input token reaches each
// output token through the stack, following attention and the residual connection.
//
// Both take the maps in FORWARD order (layer 0 = the first attention module that ran), each
// [batch, heads, seq, seq] (study/attribution/layer_maps.h), and return [batch, seq, seq]:
// result[b, i, j] = how much input token j contributes to output token i of sequence b.
// The product puts later layers on the left, R = Â_L ··· Â_2 · Â_1, since layer l mixes what
// layer l-1 produced. The same maps in backward order (what a script that appends gradients in
// backward hooks collects) give a different, wrong product; these functions cannot tell, so
// reverse such a list before calling.
#include <span>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

namespace tapegrad::study {

// Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", §3 (attention rollout):
// per layer Â_l = 0.5 · mean_heads(A_l) + 0.5 · I (the residual connection as an identity
// attention), each row divided by its own sum (needed when A's rows do not sum to 1: after
// dropout, or maps that were edited), then R = Â_L ··· Â_1. Every row of R sums to 1.
// ValueError for an empty list or a row that sums to <= 0; ShapeError for maps that are not
// [batch, heads, seq, seq] or whose batch or seq differ between layers.
template <class T>
xt::xarray<T> attention_rollout(std::span<const xt::xarray<T>> attention);

// Gradient-weighted rollout: per layer Ā_l = mean_heads(max(A_l ⊙ dL/dA_l, 0)) (Chefer et al.
// 2021, Eq. 5: the clip per head, before the mean), Â_l = Ā_l + I with each row divided by its
// own sum (the normalisation of compute_rollout_attention in Chefer et al.'s code:
// sum(dim=-1, keepdim=True)), then R = Â_L ··· Â_1. Every row sums to 1. Chefer's relevance rule without the normalisation is chefer_self_attention_relevance
// (study/attribution/chefer_relevance.h). gradients[l] is dL/dA for attention[l], same shape.
// Errors as attention_rollout, plus ValueError for a different number of gradient maps and
// ShapeError for a gradient whose shape differs from its map's.
template <class T>
xt::xarray<T> gradient_weighted_rollout(std::span<const xt::xarray<T>> attention,
                                        std::span<const xt::xarray<T>> gradients);

}  // namespace tapegrad::study
