#pragma once
// Module: the base of every nn component. It owns named parameters and named child modules, and
// from those alone derives everything else: PyTorch's dotted names
// ("encoder.layers.0.self_attn.query.linear.weight"), parameters() for the optimiser,
// zero_grad(), train()/eval(), state_dict()/load_state_dict() and the printed summary.
//
// Modules are not copyable (parameters are shared handles; a copy would silently alias them):
// hold children as std::shared_ptr, created with register_module(). Every module is a template
// over T (float to train, double to gradient-check), instantiated for both in its .cpp.
//
// Sharing (weight tying) is PyTorch's: one tensor registered under several names (a module
// registered in two places, or a module registering another's weight as its own) is ONE parameter
// for named_parameters(), parameters(), num_parameters(), zero_grad() and so for optimisers, and
// keeps every name in state_dict() (a load writes each name into the one tensor, so it stays
// shared). A module may not contain itself, directly or through a descendant: registration throws.
//
// Hooks (PyTorch's register_forward_hook and the grad_output side of register_full_backward_hook)
// are on every module and run when it is called through operator() (forward() alone runs none;
// parents call their children through operator(), so a child's hooks run inside its parent's):
// - a forward hook sees the module's tensor inputs, in argument order, and its output, and may
//   return a replacement output (same shape), which is what the caller gets and what later hooks
//   see. Arguments that are not tensors (token ids, masks) are not passed: an Embedding's or a
//   Transformer's hook sees no inputs, a TransformerDecoder's only src (the encoder's output);
// - an output-gradient hook (PyTorch's register_full_backward_pre_hook) sees dL/d(output) in
//   backward and may replace it. As in PyTorch, each call that records its output returns a
//   recorded copy of it (same values; made only when the module has output-gradient hooks) with
//   the hooks on the copy (Tensor::register_hook): they run once per backward that reaches this
//   call's output, whatever the output is (an input, as Dropout in eval; a tensor a forward hook
//   returned, even the user's own leaf; a child's output), and no tensor the call did not make
//   gains a hook. A call that records nothing (no tape, NoGradGuard) or whose output needs no
//   gradient returns its output itself and hooks nothing. A parent that returns a child's output
//   (a Transformer returns its decoder's) hooks a copy of the child's copy, so the parent's hooks
//   run first in backward, then the child's, in the order the gradient reaches them.
// Hooks of either kind run in registration order; a hook that registers or removes hooks changes
// the next call, not the running one. With none registered a call costs one branch and allocates
// nothing. A module of one's own runs them by having operator() return
// this->run_hooks(forward(...), <its tensor arguments>...); a module that is never called
// (ModuleList) never runs its hooks.
//
// Constructor convention: PyTorch's required arguments, then the Generator that initialises the
// parameters, then PyTorch's defaulted arguments with PyTorch's defaults, e.g.
//   Linear<float> proj(512, 2048, gen, /*bias=*/true);
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "autograd/base/generator.h"
#include "autograd/core/tensor.h"
#include "nn/hook_point.h"

namespace tapegrad::nn {

template <class T> using StateDict = std::map<std::string, xt::xarray<T>>;

template <class T> class ParameterSubstitution;  // nn/functional_call.h

// What a non-strict load_state_dict did not match (a strict load throws instead).
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

template <class T>
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The class name shown by summary(), e.g. "Linear".
  virtual std::string type_name() const = 0;

  // This module's and every descendant's parameters by dotted name, depth first in registration
  // order. A shared tensor is listed once, under its first name (what optimisers must be given);
  // remove_duplicate = false lists it under every name (PyTorch's flag; what state_dict() holds).
  std::vector<std::pair<std::string, Tensor<T>>> named_parameters(bool remove_duplicate = true) const;
  // The tensors of named_parameters(): each shared tensor once.
  std::vector<Tensor<T>> parameters() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  // Every generator a module draws from while running (dropout streams), by dotted name; a
  // checkpoint saves their states so a resumed run draws the same numbers.
  std::vector<std::pair<std::string, Generator*>> named_generators();
  // This module (path "") and every descendant by dotted path, depth first in registration order
  // (PyTorch's named_modules); a module registered in two places is listed once, at its first path.
  std::vector<std::pair<std::string, Module*>> named_modules();
  // The descendant at dotted `path` ("" is this module). ValueError naming the first step that is
  // not a child and the children there.
  Module& get_submodule(const std::string& path);
  // Every hook point (nn/hook_point.h) of this module and its descendants by path: the module's
  // dotted path, a dot, the point's name ("decoder.decoder_layers.0.src_tgt_attention.hook_z").
  std::vector<std::pair<std::string, HookPoint<T>*>> named_hook_points();
  // The point at `path`; ValueError naming the path and listing the points of the module it names
  // (or saying which step is not a module).
  HookPoint<T>& hook_point(const std::string& path);
  // Elements of the distinct parameters (a shared tensor counts once).
  std::size_t num_parameters() const;

  // Training mode reaches every descendant (dropout is active only in training).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();

  // Copies of every parameter's value by dotted name, a shared tensor under each of its names.
  StateDict<T> state_dict() const;
  // Copies values in by dotted name. A key with the wrong shape always throws ShapeError naming
  // the key and both shapes; two names of one shared tensor with different values throw
  // ValueError naming both (the tensor cannot hold both). strict: missing or unexpected keys
  // throw ValueError listing all of them; otherwise they are returned.
  LoadResult load_state_dict(const StateDict<T>& state, bool strict = true);

  // The module tree: one line per module with its type and parameter count, one per parameter
  // with its shape, and the total.
  std::string summary() const;

  // hook(inputs, output) -> a replacement output, or nullopt to keep it (see the top of this file).
  using ForwardHook =
      std::function<std::optional<Tensor<T>>(std::span<const Tensor<T>> inputs, const Tensor<T>& output)>;
  // Each returns an id for remove_hook; ValueError naming the module for an empty hook.
  std::uint64_t register_forward_hook(ForwardHook hook);
  std::uint64_t register_output_grad_hook(GradHook<T> hook);
  // ValueError naming the module when it has no hook with that id.
  void remove_hook(std::uint64_t id);

 protected:
  // What operator() returns: forward()'s output passed through the hooks, which see `inputs`
  // (the call's tensor arguments, in order). Inline so a module with no hooks pays one branch.
  template <std::same_as<Tensor<T>>... Inputs>
  Tensor<T> run_hooks(Tensor<T> output, const Inputs&... inputs) {
    if (forward_hooks_.empty() && output_grad_hooks_.empty()) return output;
    const std::array<Tensor<T>, sizeof...(Inputs)> in{inputs...};
    return apply_hooks(in, std::move(output));
  }

  // Registers a parameter (marked requires_grad, and named unless it already has a name) and
  // returns the handle to keep. Registering a tensor that is already another module's parameter
  // ties the two: they are one parameter from then on.
  Tensor<T> register_parameter(const std::string& name, Tensor<T> value);
  // The same, storing the handle in `slot`, the member of this module that forward reads the
  // parameter from: nn::functional_call (nn/functional_call.h) can then put another tensor there
  // for one call. A parameter registered by the overload above keeps no slot, and functional_call
  // refuses to substitute it.
  void register_parameter(const std::string& name, Tensor<T>& slot, Tensor<T> value);
  // ValueError when `child` is this module or contains it (the tree would be infinite).
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    add_child(name, child);
    return child;
  }
  void register_generator(const std::string& name, Generator* generator);
  // Registers `point`, a member of this module, under `name`, which starts with "hook_" (ValueError
  // otherwise, or when the name is taken by a parameter, child or point).
  void register_hook_point(const std::string& name, HookPoint<T>& point);

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name) const;
  struct Seen;  // what named_parameters(true) has listed already
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Tensor<T>>>& out,
                          Seen* seen) const;
  bool contains(const Module* target, std::unordered_set<const Module*>& visited) const;
  void collect_generators(const std::string& prefix, std::vector<std::pair<std::string, Generator*>>& out);
  void collect_modules(const std::string& path, std::vector<std::pair<std::string, Module*>>& out,
                       std::unordered_set<const Module*>& seen);
  void append_summary(const std::string& name, std::size_t depth, std::string& out) const;
  Tensor<T> apply_hooks(std::span<const Tensor<T>> inputs, Tensor<T> output);

  friend class ParameterSubstitution<T>;  // swaps parameters_ entries and their slots

  std::vector<std::pair<std::string, Tensor<T>>> parameters_;
  std::vector<Tensor<T>*> parameter_slots_;  // parameters_[i]'s slot (see register_parameter), or null
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, Generator*>> generators_;
  std::vector<std::pair<std::string, HookPoint<T>*>> hook_points_;
  bool training_ = true;
  std::vector<std::pair<std::uint64_t, ForwardHook>> forward_hooks_;  // by id, in registration order
  std::vector<std::pair<std::uint64_t, GradHook<T>>> output_grad_hooks_;
};

extern template class Module<float>;
extern template class Module<double>;

}  // namespace tapegrad::nn
