#include "study/run_with_cache.h"

#include <algorithm>
#include <utility>

#include "autograd/core/tape.h"
#include "autograd/ops/operators.h"
#include "study/scoped_point_hooks.h"

namespace tapegrad::study {

namespace {

template <class T>
const xt::xarray<T>& cached(const std::map<std::string, xt::xarray<T>>& entries, const std::string& path,
                            const std::string& who) {
  const auto it = entries.find(path);
  if (it != entries.end()) return it->second;
  std::string known;
  for (const auto& [name, value] : entries) known += (known.empty() ? "" : ", ") + name;
  throw ValueError("ActivationCache::" + who + ": nothing cached at '" + path + "' (cached: " +
                   (known.empty() ? std::string("none") : known) + ")");
}

// A tensor at a point, held until backward has run: its gradient is the point's.
template <class T>
struct Held {
  std::string name;
  Tensor<T> tensor;
};

}  // namespace

template <class T>
const xt::xarray<T>& ActivationCache<T>::value(const std::string& path) const {
  return cached(values, path, "value");
}

template <class T>
const xt::xarray<T>& ActivationCache<T>::grad(const std::string& path) const {
  return cached(grads, path, "grad");
}

template <class T>
ActivationCache<T> run_with_cache(nn::Module<T>& model, const RunLoss<T>& run_metric,
                                  const std::vector<std::string>& points, CacheGradients gradients) {
  std::vector<nn::HookPoint<T>*> found;
  for (const std::string& path : points) found.push_back(&model.hook_point(path));  // throws before anything runs
  ActivationCache<T> cache;
  std::vector<Held<T>> held;
  std::map<std::string, std::size_t> calls;
  ScopedPointHooks<T> hooks;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (std::find(points.begin(), points.begin() + i, points[i]) != points.begin() + i) continue;  // named twice
    hooks.add(*found[i], [&, path = points[i]](const Tensor<T>& x) -> std::optional<Tensor<T>> {
      const std::size_t call = ++calls[path];
      const std::string name = call == 1 ? path : path + "#" + std::to_string(call);
      cache.values[name] = x.value();
      if (gradients == CacheGradients::kNo || !x.requires_grad()) return std::nullopt;
      // A copy of this call's own, whose retained gradient is d metric / d (this call's tensor).
      Tensor<T> own = x * T(1);
      own.retain_grad();
      held.push_back({name, own});
      return own;
    });
  }
  GradientTape tape;  // records also under a NoGradGuard (a tape made inside one does)
  const Tensor<T> metric = run_metric();
  require_defined(metric, "run_with_cache", "the metric run_metric returned");
  if (metric.numel() != 1) {
    throw ValueError("run_with_cache: run_metric must return a single-element metric, got shape " +
                     format_shape(metric.shape()));
  }
  cache.metric = double(metric.item());
  if (gradients == CacheGradients::kNo) return cache;
  if (!metric.requires_grad()) {
    throw ValueError("run_with_cache: the metric run_metric returned (" + metric.describe() +
                     ") requires no gradient: run_metric must run the model's forward and compute the metric "
                     "from its output, inside run_metric, not under NoGradGuard and not detached");
  }
  tape.backward(metric);
  for (const auto& [name, value] : cache.values) cache.grads[name] = xt::zeros<T>(value.shape());
  for (const Held<T>& h : held) {
    if (h.tensor.has_grad()) cache.grads[h.name] = h.tensor.grad();
  }
  return cache;
}

#define TAPEGRAD_INSTANTIATE_RUN_WITH_CACHE(T)                                                                 \
  template struct ActivationCache<T>;                                                                          \
  template ActivationCache<T> run_with_cache(nn::Module<T>&, const RunLoss<T>&, const std::vector<std::string>&, \
                                             CacheGradients);
TAPEGRAD_INSTANTIATE_RUN_WITH_CACHE(float)
TAPEGRAD_INSTANTIATE_RUN_WITH_CACHE(double)
#undef TAPEGRAD_INSTANTIATE_RUN_WITH_CACHE

}  // namespace tapegrad::study
