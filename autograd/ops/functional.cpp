#include "autograd/ops/functional.h"

#include <string>
#include <unordered_set>

#include "autograd/base/checks.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"

namespace tapegrad {

namespace {

std::string position(std::size_t i) { return "input " + std::to_string(i); }

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
                       format_shape(vectors[i].shape()) + " but " + position(i) + " is " + inputs[i].describe());
    }
  }
}

// The variable f receives for each input position (see the rules in ops/functional.h): a new leaf with
// the input's value, or under create_graph, for an input that requires a gradient, a recorded copy
// of it (x * 1, the same bits), so that the derivatives are recorded as functions of the caller's
// tensor. Called while the transform's tape is alive, so the copy's entry is on it.
template <class T>
std::vector<Tensor<T>> own_variables(const char* op, const std::vector<Tensor<T>>& inputs, bool create_graph) {
  std::vector<Tensor<T>> variables;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor<T>& x = inputs[i];
    require_defined(x, op, "inputs[" + std::to_string(i) + "]");
    if (!create_graph || !x.requires_grad()) {
      variables.push_back(x.detach().set_requires_grad(true));
      continue;
    }
    if (!x.is_leaf()) {
      throw TapeError(std::string(op) + ": " + position(i) + " " + x.describe() +
                      " is an intermediate (the output of an op recorded before the call), and create_graph asks "
                      "for derivatives recorded as functions of it; the transform's own tape cannot walk back into "
                      "a computation it did not record. Compute it inside the function from a leaf input, pass "
                      "it detach()ed (the derivatives are then recorded as functions of that new leaf), or leave "
                      "create_graph off");
    }
    variables.push_back(mul(x, T(1)));
  }
  return variables;
}

// The positions of `variables` that `out` does not depend on: no chain of entries on `tape` leads
// from the variable to out. Entries are in creation order, so walking them newest first reaches
// every tensor out was computed from.
template <class T>
std::vector<std::size_t> unused_positions(const GradientTape& tape, const Tensor<T>& out,
                                          const std::vector<Tensor<T>>& variables) {
  std::unordered_set<const NodeBase*> reached{out.node().get()};
  const auto entries = tape.entries();
  for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
    if (!reached.contains((*e)->output.get())) continue;
    for (const auto& input : (*e)->inputs) reached.insert(input.node.get());
  }
  std::vector<std::size_t> unused;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!reached.contains(variables[i].node().get())) unused.push_back(i);
  }
  return unused;
}

// f run once on variables of its own (own_variables), recorded on a tape of its own, after the
// checks every transform shares: at least one input, recording on, f defined and returning a
// defined tensor that depends on every input (unless allow_unused).
template <class T>
struct Recorded {
  GradientTape tape;
  std::vector<Tensor<T>> variables;
  Tensor<T> out;

  Recorded(const char* op, const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
           const FunctionalOptions& options) {
    if (inputs.empty()) {
      throw ValueError(std::string(op) + ": no inputs; give at least one tensor to differentiate with respect to");
    }
    if (!f) throw ValueError(std::string(op) + ": the function is empty");
    variables = own_variables(op, inputs, options.create_graph);
    out = f(variables);
    require_defined(out, op, "the function's result");
    if (!options.allow_unused) require_all_used(op, inputs);
  }

  // ShapeError unless out has one element (grad and hessian_vector_product need a scalar).
  void require_single_element(const char* op) const {
    if (out.numel() == 1) return;
    throw ShapeError(std::string(op) + ": the function's result " + out.describe() + " has " +
                     std::to_string(out.numel()) + " elements; " + op + " needs a single-element result (reduce it, "
                     "e.g. sum), or use vjp");
  }

  // tape.gradient, or zeros when the target is a constant: a derivative that does not depend on
  // the variables is 0 (J^T w of an op whose derivative is 0, such as sign; the gradient of an f
  // at most linear in its inputs; an unused input allowed), where gradient() would refuse a
  // target that needs no gradient.
  std::vector<Tensor<T>> gradient_or_zeros(const Tensor<T>& target, const std::vector<Tensor<T>>& sources,
                                           bool create_graph) {
    if (target.requires_grad()) return tape.gradient(target, sources, {.create_graph = create_graph});
    std::vector<Tensor<T>> zeros;
    for (const auto& s : sources) zeros.push_back(Tensor<T>::zeros(s.shape()));
    return zeros;
  }

  // f's value for the caller: as recorded under create_graph, a constant otherwise.
  Tensor<T> value(const FunctionalOptions& options) const { return options.create_graph ? out : out.detach(); }

 private:
  void require_all_used(const char* op, const std::vector<Tensor<T>>& inputs) const {
    const std::vector<std::size_t> unused = unused_positions(tape, out, variables);
    if (unused.empty()) return;
    std::string which;
    for (std::size_t i : unused) which += (which.empty() ? "" : ", ") + position(i) + " " + inputs[i].describe();
    throw ValueError(std::string(op) + ": the function's result does not depend on " + which +
                     " (no recorded op leads from it to the result: the function never reads it, or reads only its "
                     "value); pass FunctionalOptions{.allow_unused = true} to get zeros for it. A module's own "
                     "parameters are not inputs: run the module through nn::functional_call to substitute them");
  }
};

// sum over i of sum(a[i] * b[i]): the inner product of two non-empty lists of tensors.
template <class T>
Tensor<T> inner_product(const std::vector<Tensor<T>>& a, const std::vector<Tensor<T>>& b) {
  Tensor<T> total = sum(mul(a[0], b[0]));
  for (std::size_t i = 1; i < a.size(); ++i) total = add(total, sum(mul(a[i], b[i])));
  return total;
}

}  // namespace

template <class T>
std::vector<Tensor<T>> grad(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                            const FunctionalOptions& options) {
  Recorded<T> run("grad", f, inputs, options);
  run.require_single_element("grad");
  return run.gradient_or_zeros(run.out, run.variables, options.create_graph);
}

template <class T>
ValueAndDerivative<T> vjp(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs, const Tensor<T>& v,
                          const FunctionalOptions& options) {
  Recorded<T> run("vjp", f, inputs, options);
  require_defined(v, "vjp", "v");
  if (v.shape() != run.out.shape()) {
    throw ShapeError("vjp: v has shape " + format_shape(v.shape()) + " but the function's result is " +
                     run.out.describe());
  }
  std::vector<Tensor<T>> derivative = run.gradient_or_zeros(sum(mul(run.out, v)), run.variables, options.create_graph);
  return {run.value(options), std::move(derivative)};
}

template <class T>
ValueAndDerivative<T> jvp(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                          const std::vector<Tensor<T>>& tangents, const FunctionalOptions& options) {
  require_shapes_of("jvp", "tangents", tangents, inputs);
  Recorded<T> run("jvp", f, inputs, options);
  const Tensor<T> w = Tensor<T>::zeros(run.out.shape(), /*requires_grad=*/true);
  const std::vector<Tensor<T>> jt_w = run.gradient_or_zeros(sum(mul(run.out, w)), run.variables, true);
  std::vector<Tensor<T>> j_u = run.gradient_or_zeros(inner_product(jt_w, tangents), {w}, options.create_graph);
  return {run.value(options), std::move(j_u)};
}

template <class T>
std::vector<Tensor<T>> hessian_vector_product(const TensorFunction<T>& f, const std::vector<Tensor<T>>& inputs,
                                              const std::vector<Tensor<T>>& v, const FunctionalOptions& options) {
  require_shapes_of("hessian_vector_product", "v", v, inputs);
  Recorded<T> run("hessian_vector_product", f, inputs, options);
  run.require_single_element("hessian_vector_product");
  const std::vector<Tensor<T>> g = run.gradient_or_zeros(run.out, run.variables, true);
  return run.gradient_or_zeros(inner_product(g, v), run.variables, options.create_graph);
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
