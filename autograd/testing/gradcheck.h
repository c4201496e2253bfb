#pragma once
// gradcheck: compares the analytic Jacobian (backward with one-hot seeds, one per output element)
// with central finite differences, in float64, for every input that requires a gradient.
// Defaults are PyTorch's: eps 1e-6, atol 1e-5, rtol 1e-3; an element passes when
// |analytic - numeric| <= atol + rtol * |numeric|.
//
//   auto result = tapegrad::gradcheck(
//       [](const std::vector<Tensor<double>>& x) { return my_op(x[0], x[1]); }, {a, b});
//   if (!result) std::cerr << result.message;   // the worst element, fully described
//
// Before the Jacobians, gradcheck checks two things a Jacobian cannot see: that a second backward
// doubles each checked input's gradient (a backward that overwrites instead of adding fails), and
// that neither the forward nor the backward changed an input (its value, bitwise, and its version).
//
// A mismatch reports the worst element (the largest excess over its tolerance), not the first:
// the input (index, name, shape), the element's multi-index, the output's multi-index, analytic
// vs numeric, the estimated error of the numeric value, and the ops that read that input directly
// with their call sites. The same facts are in GradcheckResult::worst.
//
// The function must be deterministic (reseed any Generator inside it) and must not keep state
// between calls: gradcheck calls it twice at the inputs as given and throws ValueError when the
// two results differ in a bit (finite differences would read the noise as derivative). Its result
// must keep one shape: a finite-difference step that changes it throws ShapeError naming both
// shapes. Inputs that do not require a gradient are held constant. An input with no elements has
// an empty Jacobian: nothing to compare, so it passes (and so does gradgradcheck of a function
// with an empty result, whose first derivative J^T v is identically 0). Pass every tensor the
// function differentiates as an input: a tensor it captures that requires a gradient is not an
// input, so its gradient silently accumulates over gradcheck's many backward passes (capture
// x.detach() instead, or pass it in).
//
// For users' GoogleTest suites: EXPECT_GRADCHECK(f, inputs) in autograd/testing/gradcheck_gtest.h.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograd/core/tensor.h"

namespace tapegrad {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  // PyTorch's fast_mode: per input i, compares v^T J_i u_i (u_i and v random, fixed seed, each of
  // norm 1) computed from one backward seeded with v against one central difference along u_i,
  // instead of the whole Jacobian: one backward and two forwards per input instead of one
  // backward per output element and two forwards per input element. atol is scaled by
  // sum(u_i) * sum(v), as PyTorch does. On a mismatch it falls back to the full check to report
  // the worst element. That scaling is what every element off by atol would add up to, so it is
  // loose for sparse Jacobians: an element-wise op on n elements passes with each element off by
  // up to about atol * n (sum(u) sum(v) ~ 3n/4, while v^T diag(d) u ~ 3/4 mean(d)). Use the full
  // check for small element-wise ops and for the final word.
  bool fast_mode = false;
};

// The worst Jacobian element of a failed check.
struct GradcheckMismatch {
  std::size_t input = 0;        // index into gradcheck's inputs
  Shape input_index;            // the element of that input (a multi-index)
  Shape output_index;           // the element of the function's output
  double analytic = 0.0;
  double numeric = 0.0;
  double numeric_error = 0.0;   // estimated error of `numeric` (see the message)
  std::string read_by;          // the ops that read the input directly, with their call sites
};

struct GradcheckResult {
  bool ok = true;
  std::string message;                     // empty when ok; otherwise what failed, fully described
  std::optional<GradcheckMismatch> worst;  // set when the Jacobians differ
  explicit operator bool() const { return ok; }
};

using GradcheckFunction = std::function<Tensor<double>(const std::vector<Tensor<double>>&)>;

GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& options = {});

// float32 mode: the same checks for a function on Tensor<float>, where eps 1e-6 would be lost to
// rounding and fixed tolerances either fail a correct op or pass a wrong one. For each input
// element it takes central differences D(h) at five steps h0 * {4, 2, 1, 1/2, 1/4}, with h0 =
// cbrt(float epsilon) * max(1, |x|) (the step that balances truncation, ~h^2, against rounding,
// ~epsilon / h), and extrapolates each adjacent pair (Richardson: R = (4 D(h/2) - D(h)) / 3,
// which cancels the h^2 term). The estimated error of an R is its distance to its two
// neighbouring R's plus a rounding floor, 2 epsilon (|f(x + h)| + |f(x - h)|) / 2h at its smaller
// step; per output element the R with the smallest estimate is the numeric value. An element
// passes when |analytic - numeric| <= tolerance_factor * (estimated error + epsilon * (|analytic|
// + |numeric|)), where the spread part of the estimate is bounded by 0.1% of |numeric| (a
// function with jumps between the steps must not widen the tolerance without limit). A correct
// float op passes; a derivative off by 1% fails, whatever the estimate. Full Jacobian only (no
// fast mode); ten forwards per input element.
struct Float32GradcheckOptions {
  // How many estimated errors a difference may be. 8 leaves a margin: with 1 a few correct
  // elements (layer_norm, softmax) out of hundreds fail on their rounding noise.
  double tolerance_factor = 8.0;
};

using GradcheckFunction32 = std::function<Tensor<float>(const std::vector<Tensor<float>>&)>;

GradcheckResult gradcheck(const GradcheckFunction32& fn, const std::vector<Tensor<float>>& inputs,
                          const Float32GradcheckOptions& options = {});

// Second order: gradcheck of the first derivative. With v a fixed random tensor of fn's output
// shape, checks the Jacobian of (x, v) -> J(x)^T v (the gradients of sum(fn(x) * v) with respect
// to the inputs that require one, computed with create_graph, flattened and joined) against
// central differences of that first derivative, as PyTorch's gradgradcheck. Every op fn uses must
// have a differentiable backward (GradientOptions::create_graph). options.fast_mode applies to
// that check.
GradcheckResult gradgradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                              const GradcheckOptions& options = {});

}  // namespace tapegrad
