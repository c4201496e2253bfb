#include "nn/unary_module.h"

#include <utility>

namespace tapegrad::nn {

template <class T>
std::uint64_t UnaryModule<T>::register_forward_hook(UnaryForwardHook hook) {
  // Checked here too: the adapter below is never empty, so Module could not see an empty hook.
  if (!hook) throw ValueError(this->type_name() + ": register_forward_hook was given an empty hook");
  return Module<T>::register_forward_hook(
      [hook = std::move(hook)](std::span<const Tensor<T>> inputs, const Tensor<T>& output) {
        return hook(inputs[0], output);
      });
}

template class UnaryModule<float>;
template class UnaryModule<double>;

}  // namespace tapegrad::nn
