#pragma once
// A module with one tensor in and one tensor out: what Sequential chains.
//
// Hooks (PyTorch's register_forward_hook and the grad_output side of register_full_backward_hook),
// run by operator() (calling forward() directly runs none):
// - a forward hook sees the input and the output after forward() and may return a replacement
//   output, which is what the caller gets and what later hooks see;
// - an output-gradient hook is attached to each recorded output (Tensor::register_hook), so in
//   backward it sees dL/d(output) and may replace it. An output that is the input itself (an
//   identity such as Dropout in eval) first goes through a recorded copy, so the hook sees this
//   module's output only. Outputs that need no gradient have none to hook.
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace tapegrad::nn {

template <class T>
class UnaryModule : public Module<T> {
 public:
  using ForwardHook = std::function<std::optional<Tensor<T>>(const Tensor<T>& input, const Tensor<T>& output)>;

  virtual Tensor<T> forward(const Tensor<T>& x) = 0;
  // forward(x), then the hooks above.
  Tensor<T> operator()(const Tensor<T>& x);

  // Each returns an id for remove_hook.
  std::uint64_t register_forward_hook(ForwardHook hook);
  std::uint64_t register_output_grad_hook(GradHook<T> hook);
  // ValueError when this module has no hook with that id.
  void remove_hook(std::uint64_t id);

 private:
  std::vector<std::pair<std::uint64_t, ForwardHook>> forward_hooks_;
  std::vector<std::pair<std::uint64_t, GradHook<T>>> output_grad_hooks_;
};

extern template class UnaryModule<float>;
extern template class UnaryModule<double>;

}  // namespace tapegrad::nn
