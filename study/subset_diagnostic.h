#pragma once
// AtP*'s diagnostic for the false negatives an estimate leaves (Kramár et al. 2024, "AtP*"): the
// slices not verified by exact patching are patched together in random subsets, one forward per
// subset. If the effects inside a subset do not cancel (|effect(S)| >= the largest |effect| of a
// slice in S), each subset's |effect| bounds the effect of every slice it holds, so a slice's
// bound is the least |effect| of a subset that held it. A slice whose bound falls below the
// threshold is ruled out; every slice whose effect reaches the threshold stays (it cannot sit in a
// subset below it), so the slices not ruled out hold every false negative, and their number
// bounds how many there are. Cancellation inside a subset breaks the bound; smaller subsets make
// it rarer and rule out fewer slices per forward.
//
//   const auto atp = study::attribution_patch<float>(model, run_corrupted, clean, points, 1);
//   const std::vector<std::size_t> verified = ...;  // the rows patched exactly (say, AtP's top k)
//   const auto d = study::subset_diagnostic<float>(model, run_corrupted, clean, study::slices_of(atp), 1,
//                                                  verified, /*threshold=*/0.05 * gap, {.subsets = 64});
//   d.not_ruled_out;  // rows that could still hide an effect of at least 0.05 of the gap
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "study/activation_patching.h"
#include "study/attribution_patching.h"

namespace tapegrad::study {

struct SubsetDiagnosticOptions {
  std::size_t subsets = 64;  // random subsets patched, each in one forward
  double inclusion = 0.1;    // each unverified row's chance to be in a subset
  std::uint64_t seed = 0;
};

struct SubsetDiagnostic {
  double threshold = 0;
  double target_metric = 0;       // the target run, unpatched
  std::vector<std::size_t> rows;  // the unverified rows (indices into the slices), in order
  // Per row of `rows`: the least |effect| of a subset that held it (infinity if none did).
  std::vector<double> bound;
  std::vector<std::size_t> not_ruled_out;  // the rows (slice indices) whose bound reaches the threshold
  std::size_t subsets_patched = 0;         // subsets drawn with at least one row
  double largest_subset_effect = 0;        // the largest |effect| of a subset
};

// The slices of a table's rows (attribution_patch's or patch_slices'), in its order.
template <class Table>
std::vector<PointSlice> slices_of(const Table& table) {
  std::vector<PointSlice> slices;
  for (const auto& row : table.rows) slices.push_back({row.point, row.index});
  return slices;
}

// The diagnostic over `slices` outside `verified` (indices into slices). ValueError naming
// subset_diagnostic for active dropout (the subsets' forwards would draw different masks), a
// verified index past the slices or named twice, a threshold that is not positive and finite, no
// subsets, or an inclusion outside (0, 1]; patch_slice_set's errors otherwise.
template <class T>
SubsetDiagnostic subset_diagnostic(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                                   const std::vector<PointSlice>& slices, const SliceAxes& axes,
                                   const std::vector<std::size_t>& verified, double threshold,
                                   const SubsetDiagnosticOptions& options = {});

}  // namespace tapegrad::study
