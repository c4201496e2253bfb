#include "study/batched_patching.h"

#include <algorithm>

#include "autograd/core/tape.h"
#include "study/deterministic_forward.h"
#include "study/patch_source.h"
#include "study/scoped_point_hooks.h"
#include "study/slices.h"

namespace tapegrad::study {

namespace {

// run(replicas) under NoGradGuard, checked to give one metric per replica.
template <class T>
xt::xarray<T> replica_metrics(const ReplicatedRun<T>& run, std::size_t replicas, const std::string& who) {
  NoGradGuard no_grad;
  const Tensor<T> metrics = run(replicas);
  require_defined(metrics, who, "the metrics run returned");
  if (metrics.shape().size() != 1 || metrics.numel() != replicas) {
    throw ValueError(who + ": run(" + std::to_string(replicas) + ") must return one metric per replica, shape [" +
                     std::to_string(replicas) + "], got " + format_shape(metrics.shape()));
  }
  return metrics.value();
}

}  // namespace

IndexArray stacked_copies(const IndexArray& rows, std::size_t copies) {
  std::vector<std::size_t> shape(rows.shape().begin(), rows.shape().end());
  if (shape.empty()) throw ValueError("stacked_copies: a 0-d array has no rows to stack");
  shape[0] *= copies;
  IndexArray out = IndexArray::from_shape(shape);
  for (std::size_t c = 0; c < copies; ++c)
    std::copy(rows.begin(), rows.end(), out.begin() + static_cast<std::ptrdiff_t>(c * rows.size()));
  return out;
}

template <class T>
PatchTable patch_slices_batched(nn::Module<T>& model, const ReplicatedRun<T>& run, const ActivationCache<T>& source,
                                const std::vector<std::string>& points, const SliceAxes& axes,
                                std::size_t replicas_per_forward) {
  const std::string who = "patch_slices_batched";
  require_deterministic_forward(model, who);
  if (replicas_per_forward == 0) throw ValueError(who + ": replicas_per_forward must be at least 1");
  if (!axes.axes.empty() && axes.axes.front() == 0) {
    throw ValueError(who + ": the slices' " + axes.describe() + " include axis 0, the batch the replicas stack along");
  }
  // Every (point, slice) in patch_slices' order; each forward patches the next replicas_per_forward
  // of them, replica r its own one, whichever points they are at.
  std::vector<std::pair<std::size_t, std::size_t>> jobs;
  std::vector<nn::HookPoint<T>*> found;
  for (std::size_t p = 0; p < points.size(); ++p) {
    found.push_back(&patchable_point(model, source, points[p], axes, who));
    for (std::size_t index = 0; index < axes.count(source.values.at(points[p]).shape()); ++index) jobs.push_back({p, index});
  }
  PatchTable table;
  table.source_metric = source.metric;
  table.target_metric = double(replica_metrics(run, 1, who)(0));
  for (std::size_t first = 0; first < jobs.size(); first += replicas_per_forward) {
    const std::size_t replicas = std::min(replicas_per_forward, jobs.size() - first);
    ScopedPointHooks<T> hooks;
    std::vector<std::size_t> calls(points.size(), 0);
    for (std::size_t p = 0; p < points.size(); ++p) {
      hooks.add(*found[p], [&, p](const Tensor<T>& x) -> std::optional<Tensor<T>> {
        const std::string& path = points[p];
        const std::string name = ++calls[p] == 1 ? path : path + "#" + std::to_string(calls[p]);
        const xt::xarray<T>& from = source.value(name);
        Shape expected(from.shape().begin(), from.shape().end());
        if (!expected.empty()) expected[0] *= replicas;
        if (x.shape() != expected) {
          throw ShapeError(who + ": '" + name + "' is " + format_shape(x.shape()) + " in the run of " +
                           std::to_string(replicas) + " replicas but " + format_shape(from.shape()) +
                           " in the source; axis 0 must be the replicas' batches");
        }
        xt::xarray<T> patched = x.value();
        for (std::size_t r = 0; r < replicas; ++r) {
          const auto [point, index] = jobs[first + r];
          if (point != p) continue;
          T* replica = patched.data() + r * from.size();  // replica r's rows are contiguous
          for_each_slice_element(from.shape(), axes, index, [&](std::size_t at) { replica[at] = from.data()[at]; });
        }
        return Tensor<T>(std::move(patched));
      });
    }
    const xt::xarray<T> metrics = replica_metrics(run, replicas, who);
    for (std::size_t r = 0; r < replicas; ++r) require_reached(calls[jobs[first + r].first], points[jobs[first + r].first], who);
    for (std::size_t r = 0; r < replicas; ++r) {
      const auto [p, index] = jobs[first + r];
      table.rows.push_back({points[p], index, axes.coordinates(source.values.at(points[p]).shape(), index),
                            double(metrics(r))});
    }
  }
  return table;
}

#define TAPEGRAD_INSTANTIATE_BATCHED_PATCHING(T)                                                                  \
  template PatchTable patch_slices_batched(nn::Module<T>&, const ReplicatedRun<T>&, const ActivationCache<T>&,   \
                                           const std::vector<std::string>&, const SliceAxes&, std::size_t);
TAPEGRAD_INSTANTIATE_BATCHED_PATCHING(float)
TAPEGRAD_INSTANTIATE_BATCHED_PATCHING(double)
#undef TAPEGRAD_INSTANTIATE_BATCHED_PATCHING

}  // namespace tapegrad::study
