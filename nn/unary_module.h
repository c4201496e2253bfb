#pragma once
// A module with one tensor in and one tensor out: what Sequential chains.
//
// Its hooks are every module's (nn/module.h), run by operator(); the forward hook may also take
// the one input directly: hook(input, output) instead of hook(inputs, output).
#include <cstdint>
#include <functional>
#include <optional>

#include "nn/module.h"

namespace tapegrad::nn {

template <class T>
class UnaryModule : public Module<T> {
 public:
  using UnaryForwardHook = std::function<std::optional<Tensor<T>>(const Tensor<T>& input, const Tensor<T>& output)>;

  virtual Tensor<T> forward(const Tensor<T>& x) = 0;
  // forward(x), then the hooks.
  Tensor<T> operator()(const Tensor<T>& x) { return this->run_hooks(forward(x), x); }

  using Module<T>::register_forward_hook;
  // hook(input, output), adapted to Module's hook(inputs, output).
  std::uint64_t register_forward_hook(UnaryForwardHook hook);
};

extern template class UnaryModule<float>;
extern template class UnaryModule<double>;

}  // namespace tapegrad::nn
