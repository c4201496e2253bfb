#include "study/subset_diagnostic.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "autograd/base/generator.h"
#include "study/deterministic_forward.h"
#include "study/metric_without_tape.h"

namespace tapegrad::study {

template <class T>
SubsetDiagnostic subset_diagnostic(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                                   const std::vector<PointSlice>& slices, const SliceAxes& axes,
                                   const std::vector<std::size_t>& verified, double threshold,
                                   const SubsetDiagnosticOptions& options) {
  const std::string who = "subset_diagnostic";
  require_deterministic_forward(model, who);
  std::vector<bool> is_verified(slices.size(), false);
  for (const std::size_t v : verified) {
    if (v >= slices.size()) {
      throw ValueError(who + ": verified row " + std::to_string(v) + " is past the " + std::to_string(slices.size()) +
                       " slices");
    }
    if (is_verified[v]) throw ValueError(who + ": verified row " + std::to_string(v) + " is named twice");
    is_verified[v] = true;
  }
  if (!(threshold > 0) || !std::isfinite(threshold)) {
    throw ValueError(who + ": the threshold must be positive and finite, got " + std::to_string(threshold));
  }
  if (options.subsets == 0) throw ValueError(who + ": no subsets to patch");
  if (!(options.inclusion > 0 && options.inclusion <= 1)) {
    throw ValueError(who + ": inclusion must be in (0, 1], got " + std::to_string(options.inclusion));
  }

  SubsetDiagnostic d;
  d.threshold = threshold;
  d.target_metric = metric_without_tape<T>(run_target, who, "run_target", "metric");
  for (std::size_t i = 0; i < slices.size(); ++i)
    if (!is_verified[i]) d.rows.push_back(i);
  d.bound.assign(d.rows.size(), std::numeric_limits<double>::infinity());
  Generator gen(options.seed);
  std::vector<double> draws(d.rows.size());
  for (std::size_t s = 0; s < options.subsets && !d.rows.empty(); ++s) {
    gen.fill_uniform(draws.data(), draws.size(), 0.0, 1.0);
    std::vector<std::size_t> members;  // indices into d.rows
    std::vector<PointSlice> subset;
    for (std::size_t r = 0; r < d.rows.size(); ++r) {
      if (draws[r] >= options.inclusion) continue;
      members.push_back(r);
      subset.push_back(slices[d.rows[r]]);
    }
    if (members.empty()) continue;
    const double effect = std::abs(patch_slice_set(model, run_target, source, subset, axes) - d.target_metric);
    ++d.subsets_patched;
    d.largest_subset_effect = std::max(d.largest_subset_effect, effect);
    for (const std::size_t r : members) d.bound[r] = std::min(d.bound[r], effect);
  }
  for (std::size_t r = 0; r < d.rows.size(); ++r)
    if (d.bound[r] >= threshold) d.not_ruled_out.push_back(d.rows[r]);
  return d;
}

#define TAPEGRAD_INSTANTIATE_SUBSET_DIAGNOSTIC(T)                                                              \
  template SubsetDiagnostic subset_diagnostic(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,     \
                                              const std::vector<PointSlice>&, const SliceAxes&,                \
                                              const std::vector<std::size_t>&, double,                         \
                                              const SubsetDiagnosticOptions&);
TAPEGRAD_INSTANTIATE_SUBSET_DIAGNOSTIC(float)
TAPEGRAD_INSTANTIATE_SUBSET_DIAGNOSTIC(double)
#undef TAPEGRAD_INSTANTIATE_SUBSET_DIAGNOSTIC

}  // namespace tapegrad::study
