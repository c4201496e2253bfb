#pragma once
// Functional transforms over the tape (PyTorch's torch.autograd.functional, JAX's grad, vjp and
// jvp). Each runs f under a tape of its own and returns derivatives as tensors, without touching
// any tensor's grad().
//
//   auto [g] = grad(f, {x});                        // d f / d x, f single-element
//   auto [y, jt_v] = vjp(f, {x}, v);                // f(x) and J^T v
//   auto [y, j_u] = jvp(f, {x}, {u});               // f(x) and J u
//   auto hv = hessian_vector_product(f, {x}, {v});  // H v, f single-element
//
// Rules (tests/higher_order/functional_transforms.cpp; against PyTorch in
// tests/higher_order/functional_pytorch.cpp):
// - Each input position is a variable of its own, as in PyTorch and JAX: f receives, per
//   position, a new tensor with the input's value, so one tensor given twice is two variables
//   (the vjp of a * b at (x, x) is (v x, v x), not 2 v x per position), and an input need not
//   require a gradient, nor be a leaf.
// - create_graph: the derivatives (and vjp's and jvp's value) are recorded on the tapes alive
//   around the call as functions of the caller's tensors, so an outer tape differentiates them
//   again. Each position that requires a gradient then enters f through a recorded copy of the
//   caller's tensor (PyTorch's view_as). That tensor must be a leaf: the transform's own tape
//   cannot walk back into a computation it did not record, so an intermediate of an outer tape is
//   refused with TapeError (pass it without create_graph, or detach() it). Without create_graph
//   the results are constants: plain tensors with no history (PyTorch detaches them too).
// - An input the function's result does not depend on (no recorded op leads from it to the
//   result: f never reads it, or reads only its value()) is a ValueError naming the transform and
//   the position, in all four transforms, unless FunctionalOptions::allow_unused, which gives
//   zeros for it (torch.autograd.grad's allow_unused; torch.autograd.functional's strict=True
//   raises in all four alike). A module's own parameters are not inputs: to differentiate with
//   respect to them, run the module through nn::functional_call (nn/functional_call.h).
// - A derivative that is identically 0 through ops f does read comes back as zeros: jvp through
//   an op whose derivative is 0 (sign), hessian_vector_product of an f at most linear in its
//   inputs.
// - An empty input list is a ValueError (torch.autograd.grad refuses it too: there is nothing to
//   differentiate with respect to).
// - A call under NoGradGuard, or from a gradient hook while a backward walk runs, works: the
//   transform's own tape records (a tape made inside a NoGradGuard does, autograd/core/tape.h), as
//   PyTorch's functional API turns recording back on inside. Its create_graph results are then
//   recorded on that tape only, not on the paused ones outside.
//
// jvp is forward mode by the double-vjp construction, not a separate forward pass: with w a
// placeholder of f's output shape, J^T w is computed with create_graph, and J u is the gradient
// of <J^T w, u> with respect to w (it is linear in w, so w's value does not matter). It costs two
// backward walks and needs every op on the path to have a differentiable backward.
#include <functional>
#include <vector>

#include "autograd/core/tensor.h"

namespace tapegrad {

template <class T>
using TensorFunction = std::function<Tensor<T>(const std::vector<Tensor<T>>&)>;

struct FunctionalOptions {
  bool create_graph = false;  // record the derivatives (see GradientOptions::create_graph and above)
  bool allow_unused = false;  // zeros, instead of ValueError, for an input the result does not depend on
};

template <class T>
struct ValueAndDerivative {
  Tensor<T> value;                      // f(inputs)
  std::vector<Tensor<T>> derivative;    // vjp: one per input; jvp: J u of the output's shape, once
};

// d f / d input for each input; f must return one element.
template <class T>
std::vector<Tensor<T>> grad(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                            const FunctionalOptions& options = {});

// f(inputs) and the vector-Jacobian product J^T v for each input; v has f's output shape.
template <class T>
ValueAndDerivative<T> vjp(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs, const Tensor<T>& v,
                          const FunctionalOptions& options = {});

// f(inputs) and the Jacobian-vector product J u (derivative[0], f's output shape); tangents[i]
// has inputs[i]'s shape.
template <class T>
ValueAndDerivative<T> jvp(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                          const std::vector<Tensor<T>>& tangents, const FunctionalOptions& options = {});

// The Hessian of a single-element f times v (one tensor per input, each of its input's shape):
// the gradient of <grad f, v>.
template <class T>
std::vector<Tensor<T>> hessian_vector_product(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                                              const std::vector<Tensor<T>>& v, const FunctionalOptions& options = {});

}  // namespace tapegrad
