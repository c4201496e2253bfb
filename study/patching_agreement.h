#pragma once
// How well an estimate of patching effects (attribution_patch's) agrees with exact patching
// (patch_slices'): Pearson and Spearman correlation and top-k recall, over every slice or, where
// exact patching of every slice costs too much, over the estimate's top k plus a random sample
// (verify_attribution).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "study/attribution_patching.h"

namespace tapegrad::study {

struct Agreement {
  std::size_t compared = 0;  // slices compared
  double pearson = 0;        // of the values (NaN when either side is constant)
  double spearman = 0;       // Pearson of the ranks, ties at their mean rank
  std::size_t k = 0;         // min(k asked, compared)
  // The share of the k slices largest in |exact| that are among the k largest in |estimate|
  // (ties broken by the earlier slice).
  double top_k_recall = 0;
};

// estimates[i] and exact[i] are one slice's (effects on the metric: patched - target). ValueError
// for lengths that differ, fewer than 2 slices, or k = 0.
Agreement agreement(const std::vector<double>& estimates, const std::vector<double>& exact, std::size_t k);

// The exact effects of `table`'s rows (patch_slices' metric - target_metric, in its row order).
std::vector<double> exact_effects(const PatchTable& table);

// Which number of an attributed row to judge: AttributedSlice::estimate (with the second-order
// term) or a lambda reading atp.
using EstimateOf = std::function<double(const AttributedSlice&)>;

// What verify_attribution found.
struct Verification {
  Agreement agreement;  // over the rows patched exactly: the estimate's top k and the sample
  std::size_t sampled = 0;  // rows outside the estimate's top k patched exactly (the sample)
  // Sampled rows whose |exact effect| reaches the k-th largest |exact effect| patched: effects the
  // estimate ranked outside its top k that belong among the largest (false negatives).
  std::size_t sampled_false_negatives = 0;
  // The 95% upper confidence bound (Clopper-Pearson) on the share of false negatives among all
  // the rows outside the estimate's top k, from the sample: with none found in 59 sampled rows,
  // 0.0495. 1 without a sample. AtP*'s own diagnostic, subsets patched together, is
  // study/subset_diagnostic.h.
  double false_negative_share_bound = 1;
};

// The 95% Clopper-Pearson upper bound on a proportion with `found` successes in `trials` draws
// (1 for no draws): the p at which found or fewer would happen 5% of the time.
double proportion_upper_bound(std::size_t found, std::size_t trials);

// Exactly patches the k rows of `table` largest in |estimate| and `sample` others drawn at random
// (seeded), and gives the agreement over them (every row when k + sample covers the table) and a
// bound on the false negatives the estimate leaves outside its top k: what is checkable where a
// full exact sweep is not. The model, run and source are the ones `table` came from (patch_slice's
// errors otherwise).
template <class T>
Verification verify_attribution(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                             const AttributionTable& table, const SliceAxes& axes, const EstimateOf& estimate,
                             std::size_t k, std::size_t sample, std::uint64_t seed);

}  // namespace tapegrad::study
