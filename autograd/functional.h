#pragma once
// Functional transforms over the tape (PyTorch's torch.autograd.functional, JAX's grad, vjp and
// jvp). Each runs f(inputs) under a tape of its own and returns derivatives as tensors, without
// touching any tensor's grad(). Every input must require a gradient. With create_graph the
// results are recorded on the tapes alive around the call, so they can be differentiated again.
//
//   auto [g] = grad(f, {x});                        // d f / d x, f single-element
//   auto [y, jt_v] = vjp(f, {x}, v);                // f(x) and J^T v
//   auto [y, j_u] = jvp(f, {x}, {u});               // f(x) and J u
//   auto hv = hessian_vector_product(f, {x}, {v});  // H v, f single-element
//
// jvp is forward mode by the double-vjp construction, not a separate forward pass: with w a
// placeholder of f's output shape, J^T w is computed with create_graph, and J u is the gradient
// of <J^T w, u> with respect to w (it is linear in w, so w's value does not matter). It costs two
// backward walks and needs every op on the path to have a differentiable backward.
// A derivative that is identically 0 comes back as zeros: jvp through an op whose derivative is 0
// (sign), and hessian_vector_product of an f at most linear in its inputs.
#include <functional>
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad {

template <class T>
using TensorFunction = std::function<Tensor<T>(const std::vector<Tensor<T>>&)>;

struct FunctionalOptions {
  bool create_graph = false;  // record the derivatives (see GradientOptions::create_graph)
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
