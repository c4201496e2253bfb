#include "autograd/functional.h"

#include <string>

#include "autograd/validation.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/tape.h"

namespace tapegrad {

namespace {

// ShapeError unless each of `vectors` has the shape of the matching input.
template <class T>
void require_shapes_of(const char* op, const char* argument, const std::vector<Tensor<T>>& vectors,
                       const std::vector<Tensor<T>>& inputs) {
  if (vectors.size() != inputs.size()) {
    throw ValueError(std::string(op) + ": " + std::to_string(vectors.size()) + " " + argument + " for " +
                     std::to_string(inputs.size()) + " inputs; give one per input");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    require_defined(vectors[i], op, std::string(argument) + "[" + std::to_string(i) + "]");
    if (vectors[i].shape() != inputs[i].shape()) {
      throw ShapeError(std::string(op) + ": " + argument + "[" + std::to_string(i) + "] has shape " +
                       format_shape(vectors[i].shape()) + " but input " + std::to_string(i) + " is " +
                       inputs[i].describe());
    }
  }
}

template <class T>
Tensor<T> evaluate(const char* op, const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs) {
  if (!f) throw ValueError(std::string(op) + ": the function is empty");
  Tensor<T> out = f(inputs);
  require_defined(out, op, "the function's result");
  return out;
}

// sum over i of sum(a[i] * b[i]): the inner product of two lists of tensors.
template <class T>
Tensor<T> inner_product(const std::vector<Tensor<T>>& a, const std::vector<Tensor<T>>& b) {
  Tensor<T> total = sum(mul(a[0], b[0]));
  for (std::size_t i = 1; i < a.size(); ++i) total = add(total, sum(mul(a[i], b[i])));
  return total;
}

// tape.gradient, or zeros when the target is a constant: a derivative that does not depend on the
// sources is 0 (J^T w of an op whose derivative is 0, such as sign; the gradient of an f at most
// linear in its inputs), where gradient() would refuse a target that needs no gradient.
template <class T>
std::vector<Tensor<T>> gradient_or_zeros(GradientTape& tape, const Tensor<T>& target, const std::vector<Tensor<T>>& sources,
                                         bool create_graph) {
  if (target.requires_grad()) return tape.gradient(target, sources, {.create_graph = create_graph});
  std::vector<Tensor<T>> zeros;
  for (const auto& s : sources) zeros.push_back(Tensor<T>::zeros(s.shape()));
  return zeros;
}

}  // namespace

template <class T>
std::vector<Tensor<T>> grad(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                            const FunctionalOptions& options) {
  GradientTape tape;
  const Tensor<T> out = evaluate("grad", f, inputs);
  return tape.gradient(out, inputs, {.create_graph = options.create_graph});
}

template <class T>
ValueAndDerivative<T> vjp(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs, const Tensor<T>& v,
                          const FunctionalOptions& options) {
  GradientTape tape;
  Tensor<T> out = evaluate("vjp", f, inputs);
  require_defined(v, "vjp", "v");
  if (v.shape() != out.shape()) {
    throw ShapeError("vjp: v has shape " + format_shape(v.shape()) + " but the function's result is " + out.describe());
  }
  std::vector<Tensor<T>> derivative = tape.gradient(sum(mul(out, v)), inputs, {.create_graph = options.create_graph});
  return {std::move(out), std::move(derivative)};
}

template <class T>
ValueAndDerivative<T> jvp(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                          const std::vector<Tensor<T>>& tangents, const FunctionalOptions& options) {
  require_shapes_of("jvp", "tangents", tangents, inputs);
  GradientTape tape;
  Tensor<T> out = evaluate("jvp", f, inputs);
  const Tensor<T> w = Tensor<T>::zeros(out.shape(), /*requires_grad=*/true);
  const std::vector<Tensor<T>> jt_w = tape.gradient(sum(mul(out, w)), inputs, {.create_graph = true});
  std::vector<Tensor<T>> j_u = gradient_or_zeros(tape, inner_product(jt_w, tangents), {w}, options.create_graph);
  return {std::move(out), std::move(j_u)};
}

template <class T>
std::vector<Tensor<T>> hessian_vector_product(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                                              const std::vector<Tensor<T>>& v, const FunctionalOptions& options) {
  require_shapes_of("hessian_vector_product", "v", v, inputs);
  GradientTape tape;
  const Tensor<T> out = evaluate("hessian_vector_product", f, inputs);
  const std::vector<Tensor<T>> g = tape.gradient(out, inputs, {.create_graph = true});
  return gradient_or_zeros(tape, inner_product(g, v), inputs, options.create_graph);
}

#define TAPEGRAD_INSTANTIATE_FUNCTIONAL(T)                                                                      \
  template std::vector<Tensor<T>> grad(const TensorFunction<T>&, const std::vector<Tensor<T>>&,                 \
                                       const FunctionalOptions&);                                               \
  template ValueAndDerivative<T> vjp(const TensorFunction<T>&, const std::vector<Tensor<T>>&, const Tensor<T>&, \
                                     const FunctionalOptions&);                                                 \
  template ValueAndDerivative<T> jvp(const TensorFunction<T>&, const std::vector<Tensor<T>>&,                   \
                                     const std::vector<Tensor<T>>&, const FunctionalOptions&);                  \
  template std::vector<Tensor<T>> hessian_vector_product(const TensorFunction<T>&, const std::vector<Tensor<T>>&, \
                                                         const std::vector<Tensor<T>>&, const FunctionalOptions&);
TAPEGRAD_INSTANTIATE_FUNCTIONAL(float)
TAPEGRAD_INSTANTIATE_FUNCTIONAL(double)
#undef TAPEGRAD_INSTANTIATE_FUNCTIONAL

}  // namespace tapegrad
