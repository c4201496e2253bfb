#pragma once
// The check every patching function makes of a point it patches from a cached source.
#include <cstddef>
#include <string>

#include "nn/module.h"
#include "study/run_with_cache.h"

namespace tapegrad::study {

// The point at `path` (ValueError from Module::hook_point for an unknown one), checked: ValueError
// naming `who` when the source cached nothing there or `axis` is not an axis of its tensor.
template <class T>
nn::HookPoint<T>& patchable_point(nn::Module<T>& model, const ActivationCache<T>& source, const std::string& path,
                                  std::size_t axis, const std::string& who) {
  nn::HookPoint<T>& point = model.hook_point(path);
  const auto cached = source.values.find(path);
  if (cached == source.values.end()) {
    throw ValueError(who + ": the source cached nothing at '" + path + "'; cache it with run_with_cache");
  }
  if (axis >= cached->second.dimension()) {
    throw ValueError(who + ": axis " + std::to_string(axis) + " is not an axis of '" + path + "', " +
                     format_shape(cached->second.shape()));
  }
  return point;
}

}  // namespace tapegrad::study
