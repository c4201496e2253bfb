#include "examples/attention_study/atp_diagnostic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "autograd/base/errors.h"

namespace tapegrad::attention_study {

namespace {

// The plain AtP column of the comparison.
const std::vector<double>& atp_estimates(const study::PatchingComparison& comparison) {
  for (const auto& method : comparison.methods)
    if (method.method == "AtP") return method.estimates;
  throw ValueError("atp_diagnostic: the comparison has no AtP column");
}

}  // namespace

AtPDiagnostic atp_diagnostic(nn::Module<float>& model, const study::RunLoss<float>& run_corrupted,
                             const study::ActivationCache<float>& source, const study::PatchingComparison& comparison) {
  const std::vector<double> exact = study::exact_effects(comparison.exact);
  const std::vector<double>& atp = atp_estimates(comparison);
  AtPDiagnostic d;
  std::vector<std::size_t> order(atp.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return std::abs(atp[a]) > std::abs(atp[b]); });
  d.verified.assign(order.begin(), order.begin() + std::ptrdiff_t(std::min(kAtPVerified, order.size())));
  // The smallest effect verified; a verified row without effect (a point the corruption leaves
  // alone) sets no threshold. None left: nothing to diagnose.
  double threshold = INFINITY;
  for (const std::size_t v : d.verified)
    if (std::abs(exact[v]) > 0) threshold = std::min(threshold, std::abs(exact[v]));
  if (!std::isfinite(threshold)) return d;
  d.subsets = study::subset_diagnostic<float>(model, run_corrupted, source, study::slices_of(comparison.exact), 1,
                                              d.verified, threshold, {.subsets = 64, .inclusion = 0.1, .seed = 7});
  for (const std::size_t r : d.subsets.rows) {
    if (std::abs(exact[r]) < threshold) continue;
    ++d.false_negatives;
    const auto& kept = d.subsets.not_ruled_out;
    d.false_negatives_kept += std::find(kept.begin(), kept.end(), r) != kept.end();
  }
  return d;
}

Table atp_diagnostic_table(const AtPDiagnostic& diagnostic, const study::PatchingComparison& comparison,
                           const std::vector<std::string>& names, double gap) {
  const std::vector<double> exact = study::exact_effects(comparison.exact);
  const auto& kept = diagnostic.subsets.not_ruled_out;
  Table t{{"name", "exact", "AtP", "bound", "ruled out"}, {}};
  for (std::size_t i = 0; i < diagnostic.subsets.rows.size(); ++i) {
    const std::size_t r = diagnostic.subsets.rows[i];
    const bool ruled_out = std::find(kept.begin(), kept.end(), r) == kept.end();
    t.rows.push_back({names[r], exact[r] / gap, atp_estimates(comparison)[r] / gap,
                      diagnostic.subsets.bound[i] / std::abs(gap), ruled_out ? "yes" : "no"});
  }
  return t;
}

std::string atp_diagnostic_summary(const AtPDiagnostic& diagnostic, double gap) {
  const study::SubsetDiagnostic& s = diagnostic.subsets;
  if (s.threshold == 0) return "AtP*'s subset diagnostic: skipped, no row of AtP's top " +
                               std::to_string(diagnostic.verified.size()) + " has an exact effect to set its threshold.\n";
  char line[512];
  std::snprintf(line, sizeof line,
                "AtP*'s subset diagnostic: AtP's top %zu verified, threshold %.3g of the gap (the smallest among "
                "them); %zu random subsets of the other %zu rows rule out %zu and keep %zu. The full sweep has %zu "
                "false negatives there, %zu of them kept (atp_diagnostic.csv).\n",
                diagnostic.verified.size(), s.threshold / std::abs(gap), s.subsets_patched, s.rows.size(),
                s.rows.size() - s.not_ruled_out.size(), s.not_ruled_out.size(), diagnostic.false_negatives,
                diagnostic.false_negatives_kept);
  return line;
}

}  // namespace tapegrad::attention_study
