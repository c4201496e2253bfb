#pragma once
// Integrated-gradients patching (EAP-IG's node form; Hanna et al. 2024, after Sundararajan et al.
// 2017): AtP's gradient, taken at one end of the patch, replaced by its mean along the straight
// path from the target run to the source:
//   ig(slice) = sum over the slice of (source - target) * mean_j d metric / d point at alpha_j,
//   alpha_j = (j + 1/2) / m, j = 0 .. m-1 (the midpoint rule),
// where at alpha the run's tensors are moved by alpha * (source - target):
// - on activations (interpolate_at empty): each point on its own, the others left to follow; m
//   forwards and backwards per point. Summed over every slice of a point it is, up to the
//   quadrature's error, the exact effect of patching the whole point (completeness), exactly so
//   for a metric quadratic in the point;
// - on inputs (interpolate_at: the model's input points, such as the hook_resid_pre of the first
//   encoder and decoder layers): those moved together, every point's gradient read in the same m
//   runs; m forwards and backwards in all.
// Rows as attribution_patch's (AttributedSlice::atp holds ig; no second-order term).
//
//   const auto ig = study::integrated_patch<float>(model, run_corrupted, clean, points, 1, {.steps = 8});
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "study/attribution_patching.h"

namespace tapegrad::study {

struct IntegratedGradientsOptions {
  std::size_t steps = 8;                    // m
  std::vector<std::string> interpolate_at = {};  // empty: on activations; else these, together
};

// The mean over the m = `steps` interpolated runs of the target of d metric / d point, per call
// of each `read` point ("path", "path#2", ...: one array per call), with every call of the `moved`
// points shifted by alpha_j (source - target) as above (their tensors from `source` and `target`,
// run_with_cache's of the two runs). With nothing moved it is the gradient at the target run
// (steps = 1: one forward and backward). No parameter's grad() changes.
template <class T>
std::map<std::string, std::vector<xt::xarray<T>>> mean_gradients(nn::Module<T>& model, const RunLoss<T>& run_target,
                                                                 const ActivationCache<T>& source,
                                                                 const ActivationCache<T>& target,
                                                                 const std::vector<std::string>& read,
                                                                 const std::set<std::string>& moved, std::size_t steps,
                                                                 const std::string& who);

// attribution_patch's errors naming integrated_patch, ValueError for steps = 0, and the source
// must have cached the interpolate_at points too.
template <class T>
AttributionTable integrated_patch(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                                  const std::vector<std::string>& points, const SliceAxes& axes,
                                  const IntegratedGradientsOptions& options = {});

}  // namespace tapegrad::study
