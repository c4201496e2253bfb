#pragma once
// functional_call (PyTorch's torch.func.functional_call): runs a module with some of its
// parameters replaced, for that one call, by tensors the caller gives by dotted name
// (named_parameters()' names), and puts the module's own tensors back afterwards, also when the
// call throws. The module computes with the given tensors themselves, so their derivatives flow to
// them: this is how the functional transforms (autograd/ops/functional.h) differentiate with respect
// to a module's parameters. A function that calls model(x) directly reads the module's own
// parameters, not the transform's variables, and the transform refuses the inputs as unused.
//
// Hessian-vector product of a loss with respect to a model's parameters (PyTorch's
// hvp(lambda *p: loss(functional_call(model, dict(zip(names, p)), (x,))), params, v)):
//
//   std::vector<std::string> names;
//   std::vector<Tensor<double>> params;
//   for (const auto& [name, p] : model.named_parameters()) { names.push_back(name); params.push_back(p); }
//   const auto hv = hessian_vector_product<double>(
//       [&](const std::vector<Tensor<double>>& p) { return mse_loss(nn::functional_call(model, names, p, x), y); },
//       params, v);  // v: one tensor per parameter, of its shape
//
// Code that runs the module other than by one call (a loss function given the model, several
// calls) holds a ParameterSubstitution instead, for as long as it runs:
//
//   [&](const std::vector<Tensor<double>>& p) {
//     const nn::ParameterSubstitution<double> substituted(*model, names, p);
//     return batch_loss(*model, batch);
//   }
//
// Rules:
// - Parameters not named keep the module's own tensors. A tied parameter (one tensor under several
//   names, nn/module.h) is substituted under all of its names; two different tensors for two names
//   of one tied parameter are a ValueError (PyTorch's tie_weights).
// - ValueError for a name the module has not, a count of names and tensors that differ, an
//   undefined tensor, or a parameter registered without a slot (Module::register_parameter);
//   ShapeError naming the parameter and both shapes for a tensor of another shape. Nothing is
//   substituted when the call is refused.
// - The call runs module(args...), hooks included. The module is changed while the call runs: do
//   not use it from another thread meanwhile.
#include <concepts>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace tapegrad::nn {

// While alive, the named parameters of `module` are the given tensors (see above).
template <class T>
class ParameterSubstitution {
 public:
  ParameterSubstitution(Module<T>& module, const std::vector<std::string>& names, const std::vector<Tensor<T>>& tensors);
  ~ParameterSubstitution();
  ParameterSubstitution(const ParameterSubstitution&) = delete;
  ParameterSubstitution& operator=(const ParameterSubstitution&) = delete;

 private:
  struct Swapped {
    Module<T>* owner;
    std::size_t index;  // into owner's parameters
    Tensor<T> original;
  };
  std::vector<Swapped> swapped_;
};

extern template class ParameterSubstitution<float>;
extern template class ParameterSubstitution<double>;

// module(args...) with the parameters `names` replaced by `tensors` (names[i] by tensors[i]).
template <class M, class T, class... Args>
  requires std::derived_from<M, Module<T>>
auto functional_call(M& module, const std::vector<std::string>& names, const std::vector<Tensor<T>>& tensors,
                     Args&&... args) {
  const ParameterSubstitution<T> substituted(module, names, tensors);
  return module(std::forward<Args>(args)...);
}

}  // namespace tapegrad::nn
