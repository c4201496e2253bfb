#include "nn/unary_module.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "autograd/ops/elementwise.h"

namespace tapegrad::nn {

namespace {
std::uint64_t next_hook_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

template <class T>
Tensor<T> UnaryModule<T>::operator()(const Tensor<T>& x) {
  Tensor<T> out = forward(x);
  for (const auto& [id, hook] : forward_hooks_) {
    if (std::optional<Tensor<T>> replaced = hook(x, out)) out = std::move(*replaced);
  }
  if (!output_grad_hooks_.empty() && out.defined() && out.requires_grad()) {
    if (out.same_node(x)) out = out * T(1);  // a node of this module's own to hook (identical values)
    for (const auto& [id, hook] : output_grad_hooks_) out.register_hook(hook);
  }
  return out;
}

template <class T>
std::uint64_t UnaryModule<T>::register_forward_hook(ForwardHook hook) {
  if (!hook) throw ValueError(this->type_name() + ": register_forward_hook was given an empty hook");
  forward_hooks_.emplace_back(next_hook_id(), std::move(hook));
  return forward_hooks_.back().first;
}

template <class T>
std::uint64_t UnaryModule<T>::register_output_grad_hook(GradHook<T> hook) {
  if (!hook) throw ValueError(this->type_name() + ": register_output_grad_hook was given an empty hook");
  output_grad_hooks_.emplace_back(next_hook_id(), std::move(hook));
  return output_grad_hooks_.back().first;
}

template <class T>
void UnaryModule<T>::remove_hook(std::uint64_t id) {
  const auto erase = [id](auto& hooks) {
    const auto it = std::find_if(hooks.begin(), hooks.end(), [id](const auto& h) { return h.first == id; });
    if (it == hooks.end()) return false;
    hooks.erase(it);
    return true;
  };
  if (!erase(forward_hooks_) && !erase(output_grad_hooks_)) {
    throw ValueError(this->type_name() + ": remove_hook: no hook with id " + std::to_string(id));
  }
}

template class UnaryModule<float>;
template class UnaryModule<double>;

}  // namespace tapegrad::nn
