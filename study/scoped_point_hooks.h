#pragma once
// Hooks on hook points (nn/hook_point.h) for a scope: removed by the destructor, so also when an
// exception unwinds through it. What run_with_cache and the patching functions share; the
// points must outlive the scope (they are the model's, which the caller holds).
#include <cstdint>
#include <utility>
#include <vector>

#include "nn/hook_point.h"

namespace tapegrad::study {

template <class T>
class ScopedPointHooks {
 public:
  ScopedPointHooks() = default;
  ScopedPointHooks(const ScopedPointHooks&) = delete;
  ScopedPointHooks& operator=(const ScopedPointHooks&) = delete;
  ~ScopedPointHooks() {
    for (auto& [point, id] : added_) point->remove_hook(id);
  }

  void add(nn::HookPoint<T>& point, typename nn::HookPoint<T>::ForwardHook hook) {
    added_.emplace_back(&point, point.add_forward_hook(std::move(hook)));
  }
  void add_gradient(nn::HookPoint<T>& point, GradHook<T> hook) {
    added_.emplace_back(&point, point.add_gradient_hook(std::move(hook)));
  }

 private:
  std::vector<std::pair<nn::HookPoint<T>*, std::uint64_t>> added_;
};

}  // namespace tapegrad::study
