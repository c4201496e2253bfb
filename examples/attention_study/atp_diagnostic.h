#pragma once
// AtP*'s subset diagnostic (study/subset_diagnostic.h) on the head study's AtP column: AtP's
// kAtPVerified largest rows count as verified, the threshold is the smallest |exact effect| among
// them, and the other rows are patched together in random subsets to rule out the ones that cannot
// reach it. The head study's full exact sweep then says which rows really do, so the diagnostic
// is itself checked: every such false negative should stay among the rows not ruled out. When no
// verified row has an effect (nothing sets a threshold), the diagnostic is skipped: no rows.
#include <cstddef>
#include <string>
#include <vector>

#include "examples/attention_study/tables.h"
#include "study/patching_comparison.h"
#include "study/subset_diagnostic.h"

namespace tapegrad::attention_study {

constexpr std::size_t kAtPVerified = 10;

struct AtPDiagnostic {
  std::vector<std::size_t> verified;  // rows of the head study, AtP's largest
  study::SubsetDiagnostic subsets;
  std::size_t false_negatives = 0;       // unverified rows whose |exact effect| reaches the threshold
  std::size_t false_negatives_kept = 0;  // of them, not ruled out (all, unless effects cancelled in a subset)
};

// `comparison` is compare_patching_methods' on `points` (axis 1) of the same runs and source.
AtPDiagnostic atp_diagnostic(nn::Module<float>& model, const study::RunLoss<float>& run_corrupted,
                             const study::ActivationCache<float>& source, const study::PatchingComparison& comparison);

// Per unverified row: name, then the share of the gap of its exact effect, AtP's estimate and its
// bound, and whether it is ruled out. `names` are the head study's row names.
Table atp_diagnostic_table(const AtPDiagnostic& diagnostic, const study::PatchingComparison& comparison,
                           const std::vector<std::string>& names, double gap);

// One line: what the diagnostic ruled out and how it fared against the full sweep.
std::string atp_diagnostic_summary(const AtPDiagnostic& diagnostic, double gap);

}  // namespace tapegrad::attention_study
