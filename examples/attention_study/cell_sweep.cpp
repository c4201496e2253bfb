#include "examples/attention_study/cell_sweep.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "examples/attention_study/format.h"

namespace tapegrad::attention_study {

namespace {

constexpr std::size_t kCellTopK = 10;

// Whether cell (h, q, k) of A [batch, heads, seq_q, seq_k] is the same in every sequence of both runs.
bool same_in_every_sequence(const xt::xarray<float>& clean, const xt::xarray<float>& corrupted, std::size_t h,
                            std::size_t q, std::size_t k) {
  for (std::size_t b = 0; b < clean.shape()[0]; ++b)
    if (clean(b, h, q, k) != corrupted(b, h, q, k)) return false;
  return true;
}

}  // namespace

CellSweep cell_sweep(nn::Module<float>& model, const study::RunLoss<float>& run_clean,
                     const study::RunLoss<float>& run_corrupted, const std::string& module, const std::string& name) {
  const std::string point = module + ".hook_pattern";
  const auto clean = study::run_with_cache(model, run_clean, {point});
  const auto corrupted = study::run_with_cache(model, run_corrupted, {point});
  const xt::xarray<float>& a_clean = clean.value(point);
  const xt::xarray<float>& a_corrupted = corrupted.value(point);
  CellSweep sweep;
  sweep.module = module;
  sweep.name = name;
  sweep.heads = a_clean.shape()[1];
  sweep.queries = a_clean.shape()[2];
  sweep.keys = a_clean.shape()[3];
  if (sweep.cells() > kMaxSweptCells) return sweep;
  sweep.swept = true;
  const study::SliceAxes cell{1, 2, 3};
  sweep.exact = study::patch_slices(model, run_corrupted, clean, {point}, cell);
  sweep.atp = study::attribution_patch(model, run_corrupted, clean, {point}, cell);
  std::vector<double> estimates, exact;
  for (std::size_t i = 0; i < sweep.exact.rows.size(); ++i) {
    const auto& at = sweep.exact.rows[i].at;
    if (same_in_every_sequence(a_clean, a_corrupted, at[0], at[1], at[2])) {
      ++sweep.unchanged;
      continue;
    }
    estimates.push_back(sweep.atp.rows[i].atp);
    exact.push_back(sweep.exact.rows[i].metric - sweep.exact.target_metric);
  }
  if (exact.size() >= 2) sweep.agreement = study::agreement(estimates, exact, kCellTopK);
  return sweep;
}

Table cell_table(const CellSweep& sweep, std::size_t largest) {
  const study::PatchTable& exact = sweep.exact;
  const double gap = exact.source_metric - exact.target_metric;
  const auto share = [&](std::size_t i) { return exact.recovered(exact.rows[i]); };
  std::vector<std::size_t> order(exact.rows.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  if (largest > 0) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return std::abs(share(a)) > std::abs(share(b)); });
    order.resize(std::min(largest, order.size()));
  }
  Table t{{"module", "head", "query", "key", "exact", "AtP"}, {}};
  for (const std::size_t i : order) {
    const auto& at = exact.rows[i].at;
    t.rows.push_back({sweep.name, std::to_string(at[0]), std::to_string(at[1]), std::to_string(at[2]), share(i),
                      sweep.atp.rows[i].atp / gap});
  }
  return t;
}

std::string cell_sweep_summary(const CellSweep& sweep) {
  const std::string cells = std::to_string(sweep.cells()) + " attention cells (" + std::to_string(sweep.heads) +
                            " heads x " + std::to_string(sweep.queries) + " queries x " + std::to_string(sweep.keys) +
                            " keys) of " + sweep.name;
  if (!sweep.swept) {
    return "The " + cells + " were not patched: a forward each, more than " + std::to_string(kMaxSweptCells) + ".";
  }
  const study::Agreement& a = sweep.agreement;
  return "Patching each of the " + cells + " the same way; AtP against exact patching over the " +
         std::to_string(a.compared) + " cells whose A differs between the runs: Pearson " + short_number(a.pearson) +
         ", Spearman " + short_number(a.spearman) + ", top-" + std::to_string(a.k) + " recall " +
         short_number(a.top_k_recall) + " (cells.csv).";
}

}  // namespace tapegrad::attention_study
