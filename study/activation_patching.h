#pragma once
// Exact activation patching: the metric of a target run (say, on the corrupted input) with one
// slice of one hook point's tensor replaced by the same slice of a source: the tensors a clean run
// cached (run_with_cache), their means over a dataset (mean ablation, mean_cache), another input's
// (resample ablation) or zeros (zero ablation, zero_cache). One forward per slice, nothing recorded.
//
//   const auto clean = study::run_with_cache<float>(model, run_clean, points);
//   const auto table = study::patch_slices<float>(model, run_corrupted, clean, points, /*axis=*/1);
//   for (const auto& row : table.rows) row.point, row.index, row.metric, table.recovered(row);
//
// A slice fixes the index along `axes` of the point's tensor (study/slices.h): axis 1 is the head
// of the attention points (hook_q ... hook_result, [batch, heads, ...]) and the position of the
// residual stream ([batch, seq, d_model]); axes {1, 2, 3} of hook_pattern are an attention cell
// (head, query, key), the same in every sequence of the batch. A point reached more than once in a forward (a module called twice) is
// patched at every call, each from its own cached tensor ("path", "path#2", ...).
#include <cstddef>
#include <string>
#include <vector>

#include "study/run_with_cache.h"
#include "study/slices.h"

namespace tapegrad::study {

struct PatchedSlice {
  std::string point;
  std::size_t index = 0;        // the slice's number, row-major over its axes' extents
  std::vector<std::size_t> at;  // its index along each axis
  double metric = 0;      // the target run's metric with this slice patched
};

struct PatchTable {
  double target_metric = 0;  // the target run, unpatched
  double source_metric = 0;  // the source cache's metric (mean_cache: the runs' mean; zero_cache: 0)
  std::vector<PatchedSlice> rows;  // points in the order given, slices in order

  // (metric - target) / (source - target): the share of the gap between a clean source run and
  // the target run that patching the slice closes (TransformerLens's normalised patching metric);
  // NaN when the runs agree. For an ablation (mean or zero source) read metric - target_metric.
  double recovered(const PatchedSlice& row) const;
};

// ValueError naming patch_slices and the path for an unknown point or one the source did not
// cache, or slice axes the point's tensor does not have (or not increasing); ValueError naming the
// module when dropout is active in the model (study/deterministic_forward.h); ShapeError naming
// the point and both shapes when the target run's tensor is not the cached one's shape. run_target returns a single-element
// metric (ValueError otherwise).
template <class T>
PatchTable patch_slices(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                        const std::vector<std::string>& points, const SliceAxes& axes);

// One row of patch_slices: the target run's metric with slice `index` of `point` taken from the
// source. The same errors, and ValueError for an index past the slices.
template <class T>
double patch_slice(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                   const std::string& point, const SliceAxes& axes, std::size_t index);

// One slice of one point: what patch_slice_set patches together with others.
struct PointSlice {
  std::string point;
  std::size_t index = 0;
  bool operator==(const PointSlice&) const = default;
};

// The target run's metric with every slice of `slices` taken from the source at once, in one
// forward (AtP*'s subset diagnostic patches random sets of slices; study/subset_diagnostic.h).
// patch_slice's errors naming patch_slice_set, and ValueError for no slices or a slice named twice.
template <class T>
double patch_slice_set(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                       const std::vector<PointSlice>& slices, const SliceAxes& axes);

// The mean, over runs, of the tensors at `points` (mean ablation's source; runs over a dataset,
// each a forward returning its metric). ShapeError when two runs give a point different shapes;
// ValueError for no runs.
template <class T>
ActivationCache<T> mean_cache(nn::Module<T>& model, const std::vector<RunLoss<T>>& runs,
                              const std::vector<std::string>& points);

// A cache of zeros shaped as `like`'s values (zero ablation's source).
template <class T>
ActivationCache<T> zero_cache(const ActivationCache<T>& like);

}  // namespace tapegrad::study
