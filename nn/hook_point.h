#pragma once
// HookPoint: a named place inside a module's forward where a tensor can be read or replaced, and
// its gradient read or replaced in backward (TransformerLens's HookPoint). A module keeps its
// points as members and registers each under a name that starts with "hook_"
// (Module::register_hook_point); a point's path is its module's dotted path plus that name, e.g.
// "encoder.encoder_layers.0.multi_head_attention.hook_z", and Module::hook_point(path) finds it.
//
// The module passes the tensor through the point, x = point(x), in the layout the module documents
// for that point:
// - forward hooks run in registration order; each sees the tensor (the previous hook's result)
//   and returns a replacement of the same shape (ShapeError naming the point and both shapes
//   otherwise) or nullopt to keep it. The forward continues from the result, so gradients flow
//   through a replacement;
// - gradient hooks see dL/d(point) in backward and may replace it. They sit on a recorded copy of
//   the tensor that this call makes (as Module's output-gradient hooks do): they run once per
//   backward through this call, and no tensor the call did not make gains a hook. A call that
//   records nothing (no tape, NoGradGuard) or whose tensor needs no gradient hooks nothing.
// A hook that registers or removes hooks changes the next call, not the running one. With no hook
// a point costs one branch and returns its tensor; a module asks active() before work that only a
// hooked point needs (a change of layout, an unfused computation).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/core/tensor.h"

namespace tapegrad::nn {

template <class T>
class HookPoint {
 public:
  // hook(x) -> a replacement of x's shape, or nullopt to keep x.
  using ForwardHook = std::function<std::optional<Tensor<T>>(const Tensor<T>& x)>;

  HookPoint() = default;
  // Not copyable: a module's point is found by its address.
  HookPoint(const HookPoint&) = delete;
  HookPoint& operator=(const HookPoint&) = delete;

  // Each returns an id for remove_hook; ValueError naming the point for an empty hook.
  std::uint64_t add_forward_hook(ForwardHook hook);
  std::uint64_t add_gradient_hook(GradHook<T> hook);
  // ValueError naming the point when it has no hook with that id.
  void remove_hook(std::uint64_t id);
  bool active() const { return !forward_hooks_.empty() || !gradient_hooks_.empty(); }

  Tensor<T> operator()(Tensor<T> x) const { return active() ? apply(std::move(x)) : x; }

  // "MultiHeadAttention(d_model=8, h=2).hook_z": how messages name the point; set by
  // Module::register_hook_point.
  const std::string& owner() const { return owner_; }
  void set_owner(std::string owner) { owner_ = std::move(owner); }

 private:
  Tensor<T> apply(Tensor<T> x) const;

  std::string owner_ = "HookPoint";
  std::vector<std::pair<std::uint64_t, ForwardHook>> forward_hooks_;
  std::vector<std::pair<std::uint64_t, GradHook<T>>> gradient_hooks_;
};

// What a hook returned for `original` (an "output", a "tensor": `noun` in the message), checked:
// ShapeError naming `who` and both shapes when it is undefined or of another shape (a wrong shape
// would surface far away, in whatever consumes it).
template <class T>
Tensor<T> checked_replacement(const std::string& who, const std::string& noun, const Tensor<T>& original,
                              Tensor<T> replacement);

// x with `hooks` on its gradient: a recorded copy of x carrying them (see the top of this file),
// or x itself when no hook, nothing recorded or no gradient needed.
template <class T>
Tensor<T> with_gradient_hooks(const Tensor<T>& x, const std::vector<std::pair<std::uint64_t, GradHook<T>>>& hooks);

extern template class HookPoint<float>;
extern template class HookPoint<double>;

}  // namespace tapegrad::nn
