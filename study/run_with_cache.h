#pragma once
// run_with_cache: one forward (and, when asked, one backward) of a model with the tensors at the
// hook points asked for copied into a cache, and their gradients (TransformerLens's
// run_with_cache; nn/hook_point.h for the points and their layouts).
//
//   auto cache = study::run_with_cache<float>(model, run_metric,
//                                            {"encoder.encoder_layers.0.multi_head_attention.hook_z"},
//                                            study::CacheGradients::kYes);
//   cache.value("encoder.encoder_layers.0.multi_head_attention.hook_z");  // [batch, heads, seq_q, d_k]
//   cache.grad("encoder.encoder_layers.0.multi_head_attention.hook_z");   // d metric / d z
//
// Only the points asked for are hooked, and only for the call: the others cost nothing, and every
// hook is removed when the call returns or throws.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nn/module.h"
#include "study/attention_capture.h"

namespace tapegrad::study {

enum class CacheGradients { kNo, kYes };

template <class T>
struct ActivationCache {
  double metric = 0;  // what run_metric returned
  // By point path; a point that ran more than once in the forward (a module called twice) keeps
  // its later calls under "path#2", "path#3", ...
  std::map<std::string, xt::xarray<T>> values, grads;

  // ValueError naming the path and listing the cached ones when there is none.
  const xt::xarray<T>& value(const std::string& path) const;
  const xt::xarray<T>& grad(const std::string& path) const;
};

// Calls run_metric (the forward, returning a single-element metric: a loss, a logit, a logit
// difference) on a tape of its own with forward hooks copying the tensors at `points` (paths as
// Module::hook_point takes them, each once however often named; ValueError naming an unknown one
// before anything runs), then,
// with CacheGradients::kYes, backward from the metric with gradient hooks copying d metric / d point
// (zeros for a point the metric does not reach). As any backward, it adds into the parameters' grad().
// ValueError when the metric has more than one element, or (with gradients) requires none.
template <class T>
ActivationCache<T> run_with_cache(nn::Module<T>& model, const RunLoss<T>& run_metric,
                                  const std::vector<std::string>& points,
                                  CacheGradients gradients = CacheGradients::kNo);

extern template struct ActivationCache<float>;
extern template struct ActivationCache<double>;

}  // namespace tapegrad::study
