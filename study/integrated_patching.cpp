#include "study/integrated_patching.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "study/deterministic_forward.h"
#include "study/patch_source.h"
#include "study/perturbed_run.h"
#include "study/slices.h"

namespace tapegrad::study {

template <class T>
std::map<std::string, std::vector<xt::xarray<T>>> mean_gradients(nn::Module<T>& model, const RunLoss<T>& run_target,
                                                                 const ActivationCache<T>& source,
                                                                 const ActivationCache<T>& target,
                                                                 const std::vector<std::string>& read,
                                                                 const std::set<std::string>& moved, std::size_t steps,
                                                                 const std::string& who) {
  std::map<std::string, std::vector<xt::xarray<T>>> mean;
  std::vector<std::string> hooked = read;
  for (const std::string& path : moved)
    if (std::find(hooked.begin(), hooked.end(), path) == hooked.end()) hooked.push_back(path);
  for (std::size_t j = 0; j < steps; ++j) {
    const T alpha = (T(j) + T(0.5)) / T(steps);
    const PointShift<T> shift = [&](const std::string& name, const xt::xarray<T>&) -> std::optional<xt::xarray<T>> {
      const std::string path = name.substr(0, name.find('#'));
      if (!moved.count(path)) return std::nullopt;
      return xt::xarray<T>(alpha * (source.value(name) - target.value(name)));
    };
    GradientTape tape;
    PerturbedRun<T> run(model, run_target, hooked, tape, who, shift);
    run.take_gradients();
    for (std::size_t i = 0; i < read.size(); ++i) {
      const std::string& path = read[i];
      if (std::find(read.begin(), read.begin() + i, path) != read.begin() + i) continue;  // named twice
      std::vector<xt::xarray<T>>& sums = mean[path];
      const std::vector<PointCall<T>>& calls = run.calls()[path];
      for (std::size_t c = 0; c < calls.size(); ++c) {
        const xt::xarray<T> share = calls[c].grad.value() / T(steps);
        if (c < sums.size()) sums[c] += share;
        else sums.push_back(share);
      }
    }
  }
  return mean;
}

template <class T>
AttributionTable integrated_patch(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                                  const std::vector<std::string>& points, const SliceAxes& axes,
                                  const IntegratedGradientsOptions& options) {
  const std::string who = "integrated_patch";
  require_deterministic_forward(model, who);
  if (options.steps == 0) throw ValueError(who + ": steps must be at least 1");
  for (const std::string& path : points) patchable_point(model, source, path, axes, who);
  for (const std::string& path : options.interpolate_at) {
    model.hook_point(path);
    if (!source.values.count(path)) {
      throw ValueError(who + ": the source cached nothing at the interpolated point '" + path +
                       "'; cache it with run_with_cache");
    }
  }
  std::vector<std::string> cached = points;
  cached.insert(cached.end(), options.interpolate_at.begin(), options.interpolate_at.end());
  const ActivationCache<T> target = run_with_cache(model, run_target, cached);
  for (const std::string& path : cached) require_reached(target.values.count(path), path, who);
  for (const auto& [name, value] : target.values) {
    const auto from = source.values.find(name);
    if (from == source.values.end()) {
      throw ValueError(who + ": the target run reached '" + name + "', which the source did not cache");
    }
    if (from->second.shape() != value.shape()) {
      throw ShapeError(who + ": '" + name + "' is " + format_shape(value.shape()) + " in the target run but " +
                       format_shape(from->second.shape()) + " in the source");
    }
  }

  std::map<std::string, std::vector<xt::xarray<T>>> gradients;
  if (options.interpolate_at.empty()) {
    for (const std::string& path : points) {
      if (gradients.count(path)) continue;
      gradients[path] =
          mean_gradients(model, run_target, source, target, {path}, {path}, options.steps, who)[path];
    }
  } else {
    gradients = mean_gradients(model, run_target, source, target, points,
                               std::set<std::string>(options.interpolate_at.begin(), options.interpolate_at.end()),
                               options.steps, who);
  }

  AttributionTable table;
  table.target_metric = target.metric;
  table.source_metric = source.metric;
  for (const std::string& path : points) {
    const std::vector<xt::xarray<T>>& mean = gradients[path];
    const auto& shape = source.values.at(path).shape();
    for (std::size_t index = 0; index < axes.count(shape); ++index) {
      AttributedSlice row{path, index, axes.coordinates(shape, index)};
      for (std::size_t c = 0; c < mean.size(); ++c) {
        const std::string name = c == 0 ? path : path + "#" + std::to_string(c + 1);
        row.atp += slice_dot(xt::xarray<T>(source.value(name) - target.value(name)), mean[c], axes, index);
      }
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

#define TAPEGRAD_INSTANTIATE_INTEGRATED_PATCHING(T)                                                          \
  template std::map<std::string, std::vector<xt::xarray<T>>> mean_gradients(                                \
      nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&, const ActivationCache<T>&,               \
      const std::vector<std::string>&, const std::set<std::string>&, std::size_t, const std::string&);        \
  template AttributionTable integrated_patch(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,  \
                                             const std::vector<std::string>&, const SliceAxes&,              \
                                             const IntegratedGradientsOptions&);
TAPEGRAD_INSTANTIATE_INTEGRATED_PATCHING(float)
TAPEGRAD_INSTANTIATE_INTEGRATED_PATCHING(double)
#undef TAPEGRAD_INSTANTIATE_INTEGRATED_PATCHING

}  // namespace tapegrad::study
