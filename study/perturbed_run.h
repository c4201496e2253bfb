#pragma once
// One forward of a metric with a zero leaf added at every call of some hook points (x + z, the
// same bits): d metric / dz is the metric's total derivative at the point, through everything
// downstream however many points are hooked, and no parameter's grad() changes. What the
// attribution methods share (attribution_patching.cpp, integrated_patching.cpp).
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autograd/core/tape.h"
#include "autograd/ops/operators.h"
#include "nn/module.h"
#include "study/attention_capture.h"
#include "study/scoped_point_hooks.h"

namespace tapegrad::study {

// One call of a hooked point.
template <class T>
struct PointCall {
  std::string name;     // "path", or "path#2", ... for a later call (run_with_cache's names)
  xt::xarray<T> value;  // the tensor the point held, before the leaf (and any shift) was added
  Tensor<T> zero;       // the leaf z added to it
  Tensor<T> grad;       // d metric / d z = d metric / d point, after take_gradients
};

template <class T>
using CallsByPoint = std::map<std::string, std::vector<PointCall<T>>>;

// shift(name, x) -> a constant to add to the call's tensor x as well (integrated gradients'
// interpolation), or nullopt.
template <class T>
using PointShift = std::function<std::optional<xt::xarray<T>>(const std::string& name, const xt::xarray<T>& x)>;

template <class T>
class PerturbedRun {
 public:
  // Records run() on `tape` (alive, and persistent to walk more than once) with leaves at
  // `points` (a point named twice is hooked once). ValueError naming `who` when the metric is not one element or requires
  // no gradient.
  PerturbedRun(nn::Module<T>& model, const RunLoss<T>& run, const std::vector<std::string>& points, GradientTape& tape,
               const std::string& who, const PointShift<T>& shift = {})
      : tape_(tape) {
    {
      ScopedPointHooks<T> hooks;
      for (std::size_t i = 0; i < points.size(); ++i) {
        const std::string& path = points[i];
        if (std::find(points.begin(), points.begin() + i, path) != points.begin() + i) continue;  // named twice
        hooks.add(model.hook_point(path), [&, path](const Tensor<T>& x) -> std::optional<Tensor<T>> {
          std::vector<PointCall<T>>& list = calls_[path];
          const std::string name = list.empty() ? path : path + "#" + std::to_string(list.size() + 1);
          list.push_back({name, x.value(), Tensor<T>::zeros(x.shape(), /*requires_grad=*/true), {}});
          const std::optional<xt::xarray<T>> moved = shift ? shift(name, x.value()) : std::nullopt;
          return (moved ? x + Tensor<T>(*moved) : x) + list.back().zero;
        });
      }
      metric_ = run();
    }
    require_defined(metric_, who, "the metric the run returned");
    if (metric_.numel() != 1) {
      throw ValueError(who + ": the run must return a single-element metric, got shape " + format_shape(metric_.shape()));
    }
    if (!metric_.requires_grad()) {
      throw ValueError(who + ": the metric the run returned (" + metric_.describe() +
                       ") requires no gradient: the run must call the model's forward and compute the metric from "
                       "its output, not under NoGradGuard and not detached");
    }
  }

  const Tensor<T>& metric() const { return metric_; }
  CallsByPoint<T>& calls() { return calls_; }

  // d metric / d point into each call's grad, from one backward walk of the tape (recorded, to be
  // differentiated again, with create_graph).
  void take_gradients(bool create_graph = false) {
    std::vector<Tensor<T>> leaves;
    for (const auto& [path, list] : calls_)
      for (const PointCall<T>& call : list) leaves.push_back(call.zero);
    GradientOptions options;
    options.create_graph = create_graph;
    const std::vector<Tensor<T>> grads = tape_.gradient(metric_, leaves, options);
    std::size_t next = 0;
    for (auto& [path, list] : calls_)
      for (PointCall<T>& call : list) call.grad = grads[next++];
  }

 private:
  GradientTape& tape_;
  CallsByPoint<T> calls_;
  Tensor<T> metric_;
};

}  // namespace tapegrad::study
