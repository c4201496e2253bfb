#pragma once
// Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", §3).
//
// The stack as a layered graph: a node per token per layer, layer 0 the inputs, layer L the
// outputs of the last attention module; an edge from token j of layer l-1 to token i of layer l
// with capacity Â_l[i, j], where Â_l = 0.5 · mean_heads(A_l) + 0.5 · I with rows normalised to
// sum to 1 (the same Â as attention_rollout). flow[b, i, j] is the value of a maximum flow from
// input token j (layer 0) to output token i (layer L): where rollout multiplies along paths and
// adds them up, flow lets parallel paths share a bottleneck only up to its capacity.
//
// attention: forward order, each [batch, heads, seq, seq], entries >= 0 (they are capacities).
// Returns [batch, seq, seq]. Abnar & Zuidema's code then divides each output token's row by its
// sum; pass normalize_rows = true for that (rows whose flow is all 0 stay 0).
//
// Cost: seq² max-flow problems per sequence (one per (i, j) pair; max flow from one source to
// many sinks does not share work), each on a graph of (L+1)·seq nodes and L·seq² edges, solved by
// Dinic's algorithm (study/attribution/max_flow.h). Measured per sequence (Release, one core):
// seq 10 and 2 layers under 1 ms, seq 32 and 4 layers 0.04 s, seq 64 and 6 layers 1.2 s;
// rollout takes 2 ms for the last.
//
// Errors: as attention_rollout (empty list, shapes, a row summing to <= 0), and ValueError naming
// the layer and the value when an entry is negative or not finite.
#include <span>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

namespace tapegrad::study {

template <class T>
xt::xarray<T> attention_flow(std::span<const xt::xarray<T>> attention, bool normalize_rows = false);

}  // namespace tapegrad::study
