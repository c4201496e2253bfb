#include "study/activation_patching.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "autograd/core/tape.h"
#include "study/metric_without_tape.h"
#include "study/scoped_point_hooks.h"

namespace tapegrad::study {

namespace {

// x with slice `index` along `axis` taken from `source` (of x's shape).
template <class T>
xt::xarray<T> with_slice_from(const xt::xarray<T>& x, const xt::xarray<T>& source, std::size_t axis,
                              std::size_t index) {
  xt::xarray<T> out = x;
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (std::size_t d = axis + 1; d < x.dimension(); ++d) inner *= x.shape()[d];
  const std::size_t along = x.shape()[axis];
  for (std::size_t o = 0; o < outer; ++o) {
    const std::size_t at = (o * along + index) * inner;
    std::copy(source.data() + at, source.data() + at + inner, out.data() + at);
  }
  return out;
}

}  // namespace

double PatchTable::recovered(const PatchedSlice& row) const {
  const double gap = source_metric - target_metric;
  return gap == 0 ? std::numeric_limits<double>::quiet_NaN() : (row.metric - target_metric) / gap;
}

template <class T>
PatchTable patch_slices(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                        const std::vector<std::string>& points, std::size_t axis) {
  const std::string who = "patch_slices";
  std::vector<nn::HookPoint<T>*> found;
  for (const std::string& path : points) {
    found.push_back(&model.hook_point(path));
    if (!source.values.count(path)) {
      throw ValueError(who + ": the source cached nothing at '" + path + "'; cache it with run_with_cache");
    }
    if (axis >= source.values.at(path).dimension()) {
      throw ValueError(who + ": axis " + std::to_string(axis) + " is not an axis of '" + path + "', " +
                       format_shape(source.values.at(path).shape()));
    }
  }
  PatchTable table;
  table.source_metric = source.metric;
  table.target_metric = metric_without_tape<T>(run_target, who, "run_target", "metric");
  for (std::size_t p = 0; p < points.size(); ++p) {
    const std::string& path = points[p];
    for (std::size_t index = 0; index < source.values.at(path).shape()[axis]; ++index) {
      std::size_t call = 0;
      ScopedPointHooks<T> hooks;
      hooks.add(*found[p], [&](const Tensor<T>& x) -> std::optional<Tensor<T>> {
        const std::string name = ++call == 1 ? path : path + "#" + std::to_string(call);
        const xt::xarray<T>& from = source.value(name);
        if (from.shape() != x.value().shape()) {
          throw ShapeError(who + ": '" + name + "' is " + format_shape(x.shape()) + " in the target run but " +
                           format_shape(from.shape()) + " in the source");
        }
        return Tensor<T>(with_slice_from(x.value(), from, axis, index));
      });
      table.rows.push_back({path, index, metric_without_tape<T>(run_target, who, "run_target", "metric")});
    }
  }
  return table;
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
                                   const std::vector<std::string>&, std::size_t);                         \
  template ActivationCache<T> mean_cache(nn::Module<T>&, const std::vector<RunLoss<T>>&,                  \
                                         const std::vector<std::string>&);                                \
  template ActivationCache<T> zero_cache(const ActivationCache<T>&);
TAPEGRAD_INSTANTIATE_PATCHING(float)
TAPEGRAD_INSTANTIATE_PATCHING(double)
#undef TAPEGRAD_INSTANTIATE_PATCHING

}  // namespace tapegrad::study
