#include "study/patching_comparison.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <utility>

#include "study/integrated_patching.h"

namespace tapegrad::study {

namespace {

// The seconds f() takes and what it returns.
template <class F>
auto timed(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  auto result = f();
  return std::make_pair(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), std::move(result));
}

}  // namespace

template <class T>
PatchingComparison compare_patching_methods(nn::Module<T>& model, const RunLoss<T>& run_target,
                                            const ActivationCache<T>& source, const std::vector<std::string>& points,
                                            const SliceAxes& axes, const ComparisonOptions& options) {
  PatchingComparison comparison;
  std::tie(comparison.exact_seconds, comparison.exact) =
      timed([&] { return patch_slices(model, run_target, source, points, axes); });
  const std::vector<double> exact = exact_effects(comparison.exact);
  std::vector<double> magnitudes;
  for (double e : exact) magnitudes.push_back(std::abs(e));

  // One method: its table, which number of a row it estimates, and what that is judged against.
  const auto add = [&](const std::string& name, const std::function<AttributionTable()>& compute,
                       double (*estimate)(const AttributedSlice&), const std::vector<double>& judged_against) {
    auto [seconds, table] = timed(compute);
    MethodEstimates column{name, {}, seconds, {}};
    for (const AttributedSlice& row : table.rows) column.estimates.push_back(estimate(row));
    column.agreement = agreement(column.estimates, judged_against, options.k);
    comparison.methods.push_back(std::move(column));
  };
  const auto first_order = [](const AttributedSlice& r) { return r.atp; };
  const auto attributed = [&](const AttributionOptions& o) {
    return [&, o] { return attribution_patch(model, run_target, source, points, axes, o); };
  };
  add("AtP", attributed({}), first_order, exact);
  add("AtP + QK fix", attributed({.qk_fix = true}), first_order, exact);
  add("AtP + second order", attributed({.second_order = true}), [](const AttributedSlice& r) { return r.estimate(); },
      exact);
  if (!options.grad_drop_layers.empty()) {
    add("GradDrop", attributed({.grad_drop_layers = options.grad_drop_layers}),
        [](const AttributedSlice& r) { return r.grad_drop; }, magnitudes);
  }
  if (options.ig_steps > 0) {
    const std::string m = "m=" + std::to_string(options.ig_steps);
    add("EAP-IG on activations, " + m,
        [&] { return integrated_patch(model, run_target, source, points, axes, {.steps = options.ig_steps}); },
        first_order, exact);
    if (!options.ig_inputs.empty()) {
      add("EAP-IG on inputs, " + m,
          [&] {
            return integrated_patch(model, run_target, source, points, axes,
                                    {.steps = options.ig_steps, .interpolate_at = options.ig_inputs});
          },
          first_order, exact);
    }
  }
  return comparison;
}

#define TAPEGRAD_INSTANTIATE_PATCHING_COMPARISON(T)                                                             \
  template PatchingComparison compare_patching_methods(nn::Module<T>&, const RunLoss<T>&,                      \
                                                       const ActivationCache<T>&, const std::vector<std::string>&, \
                                                       const SliceAxes&, const ComparisonOptions&);
TAPEGRAD_INSTANTIATE_PATCHING_COMPARISON(float)
TAPEGRAD_INSTANTIATE_PATCHING_COMPARISON(double)
#undef TAPEGRAD_INSTANTIATE_PATCHING_COMPARISON

}  // namespace tapegrad::study
