#pragma once
// Attribution patching (AtP; Nanda 2023, Kramár et al. 2024): what patching one slice of a hook
// point from a source would change the metric by, estimated by the first-order Taylor term at the
// target run,
//   atp(slice) = sum over the slice of (source - target) * d metric / d point,
// for every slice of every point from the cached source and ONE forward and backward of the target
// run, where exact patching (patch_slices) runs one forward per slice. Rows are in patch_slices'
// order, and an estimate is of patch_slices' `metric - target_metric`.
//
//   const auto clean = study::run_with_cache<float>(model, run_clean, points);
//   const auto atp = study::attribution_patch<float>(model, run_corrupted, clean, points, /*axis=*/1,
//                                                   {.qk_fix = true, .second_order = true});
//
// Options, each for what the linearisation gets wrong:
// - qk_fix (AtP*'s QK fix): a slice of hook_q or hook_k moves the scores S, and through a saturated
//   softmax even a large move has a near-zero gradient, so AtP misses it. With the fix, such a
//   slice's atp is sum (A' - A) * d metric / dA with A' = softmax(S + dS) computed exactly,
//   dS = dq k^T / sqrt(d_k) (or q dk^T / sqrt(d_k), the scale of all three attention families):
//   linear only after the softmax. It caches the module's hook_attn_scores and hook_pattern too.
// - second_order: adds the expansion's next term, 1/2 d^T H d, with d the slice's patch direction
//   (source - target on the slice, zero elsewhere) and H the metric's Hessian in the point: one
//   Hessian-vector product per slice on one recorded graph of the gradient (create_graph). Exact
//   when the metric is quadratic in the point. Rows the QK fix computed take none (0): they are
//   exact up to A.
// - grad_drop_layers (AtP*'s GradDrop): a patch's direct and indirect effects can cancel in the
//   gradient (a false negative), not in the patch. Given the points through which each layer adds
//   to the residual stream (layer_output_points(model): hook_<sublayer>_out), each row also gets
//   grad_drop = 1/(L-1) sum over the L layers of |atp with d metric / d(point) zeroed at that
//   layer's points|: one more backward walk per layer, no more forwards. A large grad_drop beside
//   a small |atp| flags a cancellation; verify it by exact patching.
//
// The metric's gradient at each point is taken by adding a zero leaf to the point's tensor (x + z,
// the same bits) and differentiating with respect to z: the total derivative through everything
// downstream, however many points are hooked, and no parameter's grad() changes.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "study/activation_patching.h"

namespace tapegrad::study {

struct AttributionOptions {
  bool qk_fix = false;
  bool second_order = false;
  std::vector<std::vector<std::string>> grad_drop_layers = {};  // empty, or two layers or more
};

struct AttributedSlice {
  std::string point;
  std::size_t index = 0;        // the slice's number (study/slices.h)
  std::vector<std::size_t> at;  // its index along each axis
  double atp = 0;           // the first-order estimate (the QK-fixed one for hook_q / hook_k with qk_fix)
  double second_order = 0;  // 1/2 d^T H d (0 without AttributionOptions::second_order)
  double grad_drop = 0;     // GradDrop's estimate of |effect| (0 without grad_drop_layers)

  double estimate() const { return atp + second_order; }
  // |second_order| / (|atp| + |second_order|), 0 when both are 0: near 0 the linear term carries
  // the estimate; near 1 the curvature does, and the slice deserves an exact patch.
  double curvature_share() const;
};

struct AttributionTable {
  double target_metric = 0;  // the target run's metric
  double source_metric = 0;  // the source cache's
  std::vector<AttributedSlice> rows;
};

// The points through which each layer of `model` adds to its residual stream, one group per
// module that has hook_<sublayer>_out points (nn/transformer/sublayer_connection.h), in the
// order of named_hook_points(): AttributionOptions::grad_drop_layers for the Transformer.
template <class T>
std::vector<std::vector<std::string>> layer_output_points(nn::Module<T>& model);

// The errors of patch_slices (unknown point, uncached source, bad axes, active dropout, a target
// tensor of another shape than the source's) naming attribution_patch, and ValueError when
// run_target's metric is not one element or requires no gradient, or grad_drop_layers has one
// layer only or an empty one.
template <class T>
AttributionTable attribution_patch(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                                   const std::vector<std::string>& points, const SliceAxes& axes,
                                   const AttributionOptions& options = {});

}  // namespace tapegrad::study
