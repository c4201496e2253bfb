#include "nn/hook_point.h"

#include "autograd/base/callback_ids.h"
#include "autograd/ops/operators.h"

namespace tapegrad::nn {

template <class T>
std::uint64_t HookPoint<T>::add_forward_hook(ForwardHook hook) {
  if (!hook) throw ValueError(owner_ + ": add_forward_hook was given an empty hook");
  return add_callback(forward_hooks_, std::move(hook));
}

template <class T>
std::uint64_t HookPoint<T>::add_gradient_hook(GradHook<T> hook) {
  if (!hook) throw ValueError(owner_ + ": add_gradient_hook was given an empty hook");
  return add_callback(gradient_hooks_, std::move(hook));
}

template <class T>
void HookPoint<T>::remove_hook(std::uint64_t id) {
  if (!remove_callback(forward_hooks_, id) && !remove_callback(gradient_hooks_, id)) {
    throw ValueError(owner_ + ": remove_hook: no hook with id " + std::to_string(id));
  }
}

template <class T>
Tensor<T> HookPoint<T>::apply(Tensor<T> x) const {
  // Copies, so a hook that registers or removes hooks does not invalidate the loop.
  const auto forward_hooks = forward_hooks_;
  const auto gradient_hooks = gradient_hooks_;
  for (std::size_t i = 0; i < forward_hooks.size(); ++i) {
    std::optional<Tensor<T>> replaced = forward_hooks[i].second(x);
    if (replaced) x = checked_replacement(owner_ + ": forward hook " + std::to_string(i + 1), "tensor", x, std::move(*replaced));
  }
  return with_gradient_hooks(x, gradient_hooks);
}

template <class T>
Tensor<T> checked_replacement(const std::string& who, const std::string& noun, const Tensor<T>& original,
                              Tensor<T> replacement) {
  if (replacement.defined() && replacement.shape() == original.shape()) return replacement;
  const std::string what =
      replacement.defined() ? "of shape " + format_shape(replacement.shape()) : std::string("that is undefined");
  const std::string article = std::string("aeiou").find(noun.front()) == std::string::npos ? "a " : "an ";
  throw ShapeError(who + " returned a replacement " + what + " for " + article + noun + " of shape " +
                   format_shape(original.shape()) + "; a replacement must have the " + noun + "'s shape");
}

template <class T>
Tensor<T> with_gradient_hooks(const Tensor<T>& x, const std::vector<std::pair<std::uint64_t, GradHook<T>>>& hooks) {
  if (hooks.empty() || !x.defined() || !x.requires_grad()) return x;
  // x may be a tensor this call did not make (an input, the user's leaf a forward hook returned):
  // hooking it would add hooks to it at every call. A recorded copy (identical values, dL/dcopy
  // passed through unchanged) belongs to this call alone.
  Tensor<T> own = x * T(1);
  if (!own.requires_grad()) return x;  // nothing is recorded: no backward will reach a hook
  for (const auto& [id, hook] : hooks) own.register_hook(hook);
  return own;
}

template class HookPoint<float>;
template class HookPoint<double>;
template Tensor<float> checked_replacement(const std::string&, const std::string&, const Tensor<float>&,
                                           Tensor<float>);
template Tensor<double> checked_replacement(const std::string&, const std::string&, const Tensor<double>&,
                                            Tensor<double>);
template Tensor<float> with_gradient_hooks(const Tensor<float>&,
                                           const std::vector<std::pair<std::uint64_t, GradHook<float>>>&);
template Tensor<double> with_gradient_hooks(const Tensor<double>&,
                                            const std::vector<std::pair<std::uint64_t, GradHook<double>>>&);

}  // namespace tapegrad::nn
