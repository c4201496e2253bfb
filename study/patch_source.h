#pragma once
// The check every patching function makes of a point it patches from a cached source.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "nn/module.h"
#include "study/run_with_cache.h"
#include "study/slices.h"

namespace tapegrad::study {

// "a.b.hook_q" -> ("a.b", "hook_q").
inline std::pair<std::string, std::string> module_and_point(const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos) return {"", path};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

// The source's tensor at `path`: ValueError naming `who` when the source cached nothing or NaN
// there.
template <class T>
const xt::xarray<T>& cached_source_value(const ActivationCache<T>& source, const std::string& path,
                                         const std::string& who) {
  const auto cached = source.values.find(path);
  if (cached == source.values.end()) {
    throw ValueError(who + ": the source cached nothing at '" + path + "'; cache it with run_with_cache");
  }
  const auto& value = cached->second;
  // Not infinity: masked scores are -inf in two of the attention families (hook_attn_scores).
  if (std::any_of(value.begin(), value.end(), [](T v) { return std::isnan(v); })) {
    throw ValueError(who + ": the source's '" + path + "' holds NaN: every patch from it would too");
  }
  return value;
}

// The point at `path` (ValueError from Module::hook_point for an unknown one), checked: ValueError
// naming `who` when the source cached nothing or NaN there, or the slice's axes are
// none, not increasing or not axes of its tensor.
template <class T>
nn::HookPoint<T>& patchable_point(nn::Module<T>& model, const ActivationCache<T>& source, const std::string& path,
                                  const SliceAxes& slice, const std::string& who) {
  nn::HookPoint<T>& point = model.hook_point(path);
  const xt::xarray<T>& value = cached_source_value(source, path, who);
  const auto& axes = slice.axes;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] >= value.dimension()) {
      throw ValueError(who + ": axis " + std::to_string(axes[k]) + " is not an axis of '" + path + "', " +
                       format_shape(value.shape()));
    }
    if (k > 0 && axes[k] <= axes[k - 1]) {
      throw ValueError(who + ": the slice's " + slice.describe() + " must increase, each axis once");
    }
  }
  if (axes.empty()) throw ValueError(who + ": a slice needs one axis or more, got none");
  return point;
}

// ValueError naming `who` and the point: the target run never reached it, so a patch there could
// not change anything (a run that stops before it, such as an encoder-only call).
inline void require_reached(std::size_t calls, const std::string& path, const std::string& who) {
  if (calls == 0) {
    throw ValueError(who + ": the target run never reached '" + path + "': nothing there to patch");
  }
}

}  // namespace tapegrad::study
