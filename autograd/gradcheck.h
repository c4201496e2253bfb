#pragma once
// gradcheck: compares the analytic Jacobian (backward with one-hot seeds, one per output element)
// with central finite differences, in float64, for every input that requires a gradient.
// Defaults are PyTorch's: eps 1e-6, atol 1e-5, rtol 1e-3; an element passes when
// |analytic - numeric| <= atol + rtol * |numeric|.
//
//   auto result = tapegrad::gradcheck(
//       [](const std::vector<Tensor<double>>& x) { return my_op(x[0], x[1]); }, {a, b});
//   if (!result) std::cerr << result.message;   // names the input, the element and both values
//
// The function must be deterministic (reseed any Generator inside it) and must not keep state
// between calls. Inputs that do not require a gradient are held constant. Pass every tensor the
// function differentiates as an input: a tensor it captures that requires a gradient is not an
// input, so its gradient silently accumulates over gradcheck's many backward passes (capture
// x.detach() instead, or pass it in).
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // empty when ok; otherwise the first mismatch, fully described
  explicit operator bool() const { return ok; }
};

using GradcheckFunction = std::function<Tensor<double>(const std::vector<Tensor<double>>&)>;

GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& options = {});

// Second order: gradcheck of the first derivative. With v a fixed random tensor of fn's output
// shape, checks the Jacobian of (x, v) -> J(x)^T v (the gradients of sum(fn(x) * v) with respect
// to the inputs that require one, computed with create_graph, flattened and joined) against
// central differences of that first derivative, as PyTorch's gradgradcheck. Every op fn uses must
// have a differentiable backward (GradientOptions::create_graph).
GradcheckResult gradgradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                              const GradcheckOptions& options = {});

}  // namespace tapegrad
