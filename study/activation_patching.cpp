#include "study/activation_patching.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "autograd/core/tape.h"
#include "study/deterministic_forward.h"
#include "study/metric_without_tape.h"
#include "study/patch_source.h"
#include "study/scoped_point_hooks.h"
#include "study/slices.h"

namespace tapegrad::study {

double PatchTable::recovered(const PatchedSlice& row) const {
  const double gap = source_metric - target_metric;
  return gap == 0 ? std::numeric_limits<double>::quiet_NaN() : (row.metric - target_metric) / gap;
}

namespace {

// The target run's metric with slices `indices` of the checked `point` taken from the source (at
// every call of the point, each from its own cached tensor).
template <class T>
double metric_with_slices_patched(const std::vector<nn::HookPoint<T>*>& points, const std::vector<std::string>& paths,
                                  const std::vector<std::vector<std::size_t>>& indices, const RunLoss<T>& run_target,
                                  const ActivationCache<T>& source, const SliceAxes& axes, const std::string& who) {
  std::vector<std::size_t> calls(points.size(), 0);
  ScopedPointHooks<T> hooks;
  for (std::size_t p = 0; p < points.size(); ++p) {
    hooks.add(*points[p], [&, p](const Tensor<T>& x) -> std::optional<Tensor<T>> {
      const std::string name = ++calls[p] == 1 ? paths[p] : paths[p] + "#" + std::to_string(calls[p]);
      const xt::xarray<T>& from = source.value(name);
      if (from.shape() != x.value().shape()) {
        throw ShapeError(who + ": '" + name + "' is " + format_shape(x.shape()) + " in the target run but " +
                         format_shape(from.shape()) + " in the source");
      }
      xt::xarray<T> patched = x.value();
      for (const std::size_t index : indices[p]) copy_slice(from, patched, axes, index);
      return Tensor<T>(std::move(patched));
    });
  }
  const double metric = metric_without_tape<T>(run_target, who, "run_target", "metric");
  for (std::size_t p = 0; p < points.size(); ++p) require_reached(calls[p], paths[p], who);
  return metric;
}

// ValueError naming `who` unless `index` is one of the slices of `point` in the source.
template <class T>
void require_slice(const ActivationCache<T>& source, const std::string& point, const SliceAxes& axes,
                   std::size_t index, const std::string& who) {
  if (index >= axes.count(source.values.at(point).shape())) {
    throw ValueError(who + ": slice " + std::to_string(index) + " is out of range for " + axes.describe() +
                     " of '" + point + "', " + format_shape(source.values.at(point).shape()));
  }
}

}  // namespace

template <class T>
PatchTable patch_slices(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                        const std::vector<std::string>& points, const SliceAxes& axes) {
  const std::string who = "patch_slices";
  require_deterministic_forward(model, who);
  std::vector<nn::HookPoint<T>*> found;
  for (const std::string& path : points) found.push_back(&patchable_point(model, source, path, axes, who));
  PatchTable table;
  table.source_metric = source.metric;
  table.target_metric = metric_without_tape<T>(run_target, who, "run_target", "metric");
  for (std::size_t p = 0; p < points.size(); ++p) {
    const auto& shape = source.values.at(points[p]).shape();
    for (std::size_t index = 0; index < axes.count(shape); ++index) {
      table.rows.push_back({points[p], index, axes.coordinates(shape, index),
                            metric_with_slices_patched<T>({found[p]}, {points[p]}, {{index}}, run_target, source,
                                                          axes, who)});
    }
  }
  return table;
}

template <class T>
double patch_slice(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                   const std::string& point, const SliceAxes& axes, std::size_t index) {
  const std::string who = "patch_slice";
  require_deterministic_forward(model, who);
  nn::HookPoint<T>& found = patchable_point(model, source, point, axes, who);
  require_slice(source, point, axes, index, who);
  return metric_with_slices_patched<T>({&found}, {point}, {{index}}, run_target, source, axes, who);
}

template <class T>
double patch_slice_set(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                       const std::vector<PointSlice>& slices, const SliceAxes& axes) {
  const std::string who = "patch_slice_set";
  require_deterministic_forward(model, who);
  if (slices.empty()) throw ValueError(who + ": no slices to patch");
  std::vector<nn::HookPoint<T>*> found;
  std::vector<std::string> paths;
  std::vector<std::vector<std::size_t>> indices;
  for (const PointSlice& slice : slices) {
    std::size_t p = std::find(paths.begin(), paths.end(), slice.point) - paths.begin();
    if (p == paths.size()) {
      found.push_back(&patchable_point(model, source, slice.point, axes, who));
      paths.push_back(slice.point);
      indices.emplace_back();
    }
    require_slice(source, slice.point, axes, slice.index, who);
    if (std::find(indices[p].begin(), indices[p].end(), slice.index) != indices[p].end()) {
      throw ValueError(who + ": slice " + std::to_string(slice.index) + " of '" + slice.point + "' is named twice");
    }
    indices[p].push_back(slice.index);
  }
  return metric_with_slices_patched(found, paths, indices, run_target, source, axes, who);
}

template <class T>
ActivationCache<T> mean_cache(nn::Module<T>& model, const std::vector<RunLoss<T>>& runs,
                              const std::vector<std::string>& points) {
  if (runs.empty()) throw ValueError("mean_cache: no runs to average over");
  ActivationCache<T> mean;
  for (const RunLoss<T>& run : runs) {
    const ActivationCache<T> one = run_with_cache(model, run, points);
    for (const auto& [name, value] : one.values) {
      auto [it, first] = mean.values.try_emplace(name, value);
      if (first) continue;
      if (it->second.shape() != value.shape()) {
        throw ShapeError("mean_cache: '" + name + "' is " + format_shape(it->second.shape()) + " in one run and " +
                         format_shape(value.shape()) + " in another");
      }
      it->second += value;
    }
    mean.metric += one.metric / double(runs.size());
  }
  for (auto& [name, value] : mean.values) value /= T(runs.size());
  return mean;
}

template <class T>
ActivationCache<T> zero_cache(const ActivationCache<T>& like) {
  ActivationCache<T> zeros;
  for (const auto& [name, value] : like.values) zeros.values[name] = xt::zeros<T>(value.shape());
  return zeros;
}

#define TAPEGRAD_INSTANTIATE_PATCHING(T)                                                                   \
  template PatchTable patch_slices(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,          \
                                   const std::vector<std::string>&, const SliceAxes&);                    \
  template double patch_slice(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,               \
                              const std::string&, const SliceAxes&, std::size_t);                         \
  template double patch_slice_set(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,           \
                                  const std::vector<PointSlice>&, const SliceAxes&);                      \
  template ActivationCache<T> mean_cache(nn::Module<T>&, const std::vector<RunLoss<T>>&,                  \
                                         const std::vector<std::string>&);                                \
  template ActivationCache<T> zero_cache(const ActivationCache<T>&);
TAPEGRAD_INSTANTIATE_PATCHING(float)
TAPEGRAD_INSTANTIATE_PATCHING(double)
#undef TAPEGRAD_INSTANTIATE_PATCHING

}  // namespace tapegrad::study
