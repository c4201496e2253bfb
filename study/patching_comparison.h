#pragma once
// Exact patching and every attribution method on the same slices, side by side: each method's
// estimates, the time its call took, and its agreement with exact patching (study/
// patching_agreement.h). What attention_study's circuit section and docs/patching.md report.
//
//   const auto clean = study::run_with_cache<float>(model, run_clean, points);
//   const auto table = study::compare_patching_methods<float>(model, run_corrupted, clean, points, 1,
//                                                             {.grad_drop_layers = study::layer_output_points(model)});
#include <cstddef>
#include <string>
#include <vector>

#include "study/patching_agreement.h"

namespace tapegrad::study {

struct ComparisonOptions {
  std::vector<std::vector<std::string>> grad_drop_layers = {};  // GradDrop's layers; none: no GradDrop column
  std::size_t ig_steps = 8;                                // EAP-IG's m; 0: no EAP-IG columns
  std::vector<std::string> ig_inputs = {};  // EAP-IG on these input points too (the source must cache them)
  std::size_t k = 5;                   // the top-k of the recall
};

struct MethodEstimates {
  std::string method;             // "AtP", "AtP + QK fix", "AtP + second order", "GradDrop", "EAP-IG ..."
  std::vector<double> estimates;  // one per row of the exact table, in its order
  double seconds = 0;             // wall-clock time of the call that computed them
  // Against the exact effects (patched - target); GradDrop, an estimate of |effect|, against their
  // magnitudes.
  Agreement agreement;
};

struct PatchingComparison {
  PatchTable exact;
  double exact_seconds = 0;
  // AtP, AtP + QK fix, AtP + second order, GradDrop, EAP-IG on activations, EAP-IG on inputs
  // (each when its options ask for it)
  std::vector<MethodEstimates> methods;
};

// Runs patch_slices, then attribution_patch once per method (plain, qk_fix, second_order,
// grad_drop_layers) and integrated_patch (on activations, on inputs), on the slices of `points` along `axes`.
// Their errors.
template <class T>
PatchingComparison compare_patching_methods(nn::Module<T>& model, const RunLoss<T>& run_target,
                                            const ActivationCache<T>& source, const std::vector<std::string>& points,
                                            const SliceAxes& axes, const ComparisonOptions& options = {});

}  // namespace tapegrad::study
