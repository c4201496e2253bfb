#include "autograd/testing/gradcheck.h"

#include <algorithm>
#include <cmath>

#include "autograd/base/checks.h"
#include "autograd/testing/detail/gradcheck_common.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"

namespace tapegrad {

namespace {

using detail::input_label;

// The fixed seeds of fast mode's random directions and of gradgradcheck's v.
constexpr std::uint64_t kFastModeSeed = 20261125;
constexpr std::uint64_t kGradgradSeed = 20261123;

void check_options(const GradcheckOptions& options) {
  const auto check = [](const char* name, double value, bool positive) {
    if (!std::isfinite(value) || value < 0.0 || (positive && value == 0.0)) {
      throw ValueError(std::string("gradcheck: option ") + name + " must be finite and " + (positive ? "> 0" : ">= 0") +
                       ", got " + format_number(value));
    }
  };
  check("eps", options.eps, true);
  check("atol", options.atol, false);
  check("rtol", options.rtol, false);
}

// The function and the shape of its result at the inputs as given, which every finite
// difference must keep.
struct Probe {
  const GradcheckFunction& fn;
  const std::vector<Tensor<double>>& inputs;
  Shape out_shape;
};

// (f(x+) - f(x-)) / 2 eps, flattened, with input `input` set to `plus` and to `minus` in turn and
// then put back bit for bit. Runs while no tape of gradcheck's is alive, so nothing records it;
// fn may run a tape of its own (gradgradcheck's function differentiates inside).
xt::xarray<double> central_difference(const Probe& p, std::size_t input, xt::xarray<double> plus,
                                      xt::xarray<double> minus, double eps) {
  xt::xarray<double>& x = p.inputs[input].node()->value;
  xt::xarray<double> original = std::move(x);
  const auto moved_to = [&](xt::xarray<double> value) {
    x = std::move(value);
    const Tensor<double> f = p.fn(p.inputs);
    detail::require_output_shape(p.out_shape, f.shape(), input_label(input, p.inputs[input]) +
                                                             " moved by a finite-difference step");
    return f.value();
  };
  xt::xarray<double> f_plus, f_minus;
  try {
    f_plus = moved_to(std::move(plus));
    f_minus = moved_to(std::move(minus));
  } catch (...) {
    x = std::move(original);
    throw;
  }
  x = std::move(original);
  return xt::xarray<double>((f_plus - f_minus) / (2.0 * eps));
}

// The Jacobian column of one input element: only that element moves (the others keep their bits,
// signed zeros included).
xt::xarray<double> column(const Probe& p, std::size_t input, std::size_t element, double eps) {
  xt::xarray<double> plus = p.inputs[input].value(), minus = plus;
  plus.data()[element] += eps;
  minus.data()[element] -= eps;
  return central_difference(p, input, std::move(plus), std::move(minus), eps);
}

// The directional derivative along `direction` (fast mode's u).
xt::xarray<double> along(const Probe& p, std::size_t input, const xt::xarray<double>& direction, double eps) {
  const auto& x = p.inputs[input].value();
  return central_difference(p, input, x + eps * direction, x - eps * direction, eps);
}

GradcheckResult full_check(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                           const GradcheckOptions& options) {
  const Probe probe{fn, inputs, detail::deterministic_output_shape(fn, inputs)};
  detail::require_jacobian_fits(probe.out_shape, inputs);
  // Numeric columns first, while no tape of gradcheck's is alive to record them.
  detail::NumericJacobian numeric(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    for (std::size_t e = 0; e < inputs[i].numel(); ++e) numeric[i].push_back(column(probe, i, e, options.eps));
  }
  const detail::AnalyticJacobian analytic = detail::analytic_jacobian(fn, inputs, probe.out_shape);
  const auto worst = detail::worst_element(analytic, numeric, [&options](auto, auto, auto, double, double n) {
    return options.atol + options.rtol * std::abs(n);
  });
  if (!worst) return {};
  // Richardson: D(h) = D + c h^2 + O(h^4), so D(eps) - D(2 eps) = -3 c eps^2 and the error of
  // D(eps) is about a third of that difference (rounding noise shows in it too).
  const double at_2eps = column(probe, worst->input, worst->element, 2.0 * options.eps).data()[worst->output];
  const double numeric_error = std::abs(worst->numeric - at_2eps) / 3.0;
  return detail::report(*worst, analytic, inputs, numeric_error,
                        "central differences with eps " + format_number(options.eps) +
                            ", error |D(eps) - D(2 eps)| / 3; tolerance atol " + format_number(options.atol) +
                            " + rtol " + format_number(options.rtol) + " * |numeric|");
}

// A random direction of the given shape with entries uniform in [0, 1) and norm 1, as PyTorch's
// fast mode draws u and v.
xt::xarray<double> unit_direction(const Shape& shape, Generator& gen) {
  xt::xarray<double> d = Tensor<double>::uniform(shape, gen).value();
  double norm = 0.0;
  for (double x : d) norm += x * x;
  norm = std::sqrt(norm);
  if (norm > 0.0) d /= norm;
  return d;
}

double dot(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  double s = 0.0;
  for (std::size_t k = 0; k < a.size(); ++k) s += a.data()[k] * b.data()[k];
  return s;
}

// PyTorch's fast mode (torch/autograd/gradcheck.py, _fast_gradcheck): per checked input i,
// analytic <J_i^T v, u_i> from one backward seeded with v, numeric <v, central difference along
// u_i>. The tolerance is _adjusted_atol's: the element-wise |a - n| <= atol + rtol |n| summed
// under v^T (.) u allows v^T E u with E all atol, i.e. atol * sum(u_i) * sum(v), plus rtol |n|.
// The message of the first input whose projections differ, or nothing.
std::optional<std::string> fast_mismatch(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                                         const GradcheckOptions& options) {
  const Probe probe{fn, inputs, detail::deterministic_output_shape(fn, inputs)};
  Generator gen(kFastModeSeed);
  const xt::xarray<double> v = unit_direction(probe.out_shape, gen);
  std::vector<xt::xarray<double>> u(inputs.size());
  std::vector<double> numeric(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    u[i] = unit_direction(inputs[i].shape(), gen);
    numeric[i] = dot(v, along(probe, i, u[i], options.eps));
  }
  GradientTape tape;
  const Tensor<double> output = fn(inputs);
  detail::require_output_shape(probe.out_shape, output.shape(), "a tape recording it");
  for (const auto& x : inputs) x.node()->clear_grad();
  if (output.requires_grad()) tape.backward(output, v);
  std::optional<std::string> failure;
  for (std::size_t i = 0; i < inputs.size() && !failure; ++i) {
    if (!inputs[i].requires_grad()) continue;
    const double a = inputs[i].has_grad() ? dot(inputs[i].grad(), u[i]) : 0.0;
    const double n = numeric[i];
    const double tolerance = options.atol * xt::sum(u[i])() * xt::sum(v)() + options.rtol * std::abs(n);
    if (std::isfinite(a) && std::isfinite(n) && std::abs(a - n) <= tolerance) continue;
    failure = "v^T J u for " + input_label(i, inputs[i]) + " of shape " + format_shape(inputs[i].shape()) +
              " is analytic " + format_number(a) + ", numeric " + format_number(n) + " (tolerance " +
              format_number(tolerance) + " = atol * sum(u) * sum(v) + rtol * |numeric|; u, v random of norm 1)";
  }
  for (const auto& x : inputs) x.node()->clear_grad();
  return failure;
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& options) {
  detail::validate_inputs(inputs, "gradcheck");
  check_options(options);
  if (auto failure = detail::check_accumulation_and_integrity(fn, inputs)) return {false, *failure, std::nullopt};
  if (!options.fast_mode) return full_check(fn, inputs, options);
  const auto fast = fast_mismatch(fn, inputs, options);
  if (!fast) return {};
  // The projection says something is wrong, not where: the full Jacobian finds the worst element,
  // if it fits in memory (fast mode is how a check of a large op stays cheap).
  const std::string found = "gradcheck (fast mode): " + *fast;
  try {
    detail::require_jacobian_fits(detail::deterministic_output_shape(fn, inputs), inputs);
  } catch (const ValueError& too_large) {
    return {false, found + ". The full Jacobian, which would name the worst element, cannot be built: " +
                       too_large.what(), std::nullopt};
  }
  GradcheckResult full = full_check(fn, inputs, options);
  if (full) {
    return {false, found + "; yet every element of the full Jacobian is within tolerance (the projection's "
                           "tolerance is the tighter one here): run with fast_mode off", std::nullopt};
  }
  full.message = found + ". The full Jacobian: " + full.message;
  return full;
}

GradcheckResult gradgradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                              const GradcheckOptions& options) {
  if (std::none_of(inputs.begin(), inputs.end(), [](const auto& x) { return x.defined() && x.requires_grad(); })) {
    throw ValueError("gradgradcheck: no input requires a gradient (of " + std::to_string(inputs.size()) +
                     " inputs); mark the ones to check with set_requires_grad(true)");
  }
  Shape out_shape;
  {
    NoGradGuard shape_only;
    const Tensor<double> out = fn(inputs);
    require_defined(out, "gradgradcheck", "the function's result");
    out_shape = out.shape();
  }
  // A fixed direction v of the output's shape, not a multiple of ones, so every output element
  // weighs differently; it is an input of the checked function too (J^T v is linear in v).
  Generator direction_gen(kGradgradSeed);
  Tensor<double> v = Tensor<double>::uniform(out_shape, direction_gen, 0.5, 1.5).set_requires_grad(true);
  v.set_name("v (the gradient of the output)");
  const std::size_t n = inputs.size();
  // The first derivative J(x)^T v, every differentiated input's part flattened and joined.
  const GradcheckFunction first_derivative = [&fn, n](const std::vector<Tensor<double>>& xv) {
    const std::vector<Tensor<double>> x(xv.begin(), xv.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<Tensor<double>> sources;
    for (const auto& t : x)
      if (t.requires_grad()) sources.push_back(t);
    GradientTape tape;
    const Tensor<double> out = fn(x);
    if (!out.requires_grad()) return Tensor<double>::zeros({0});
    const std::vector<Tensor<double>> grads = tape.gradient(sum(mul(out, xv[n])), sources, {.create_graph = true});
    std::vector<Tensor<double>> flat;
    for (const auto& g : grads) flat.push_back(reshape(g, {-1}));
    return concat(flat, 0);
  };
  std::vector<Tensor<double>> extended = inputs;
  extended.push_back(v);
  GradcheckResult result = gradcheck(first_derivative, extended, options);
  if (!result) result.message = "gradgradcheck (the Jacobian of J^T v, whose elements are the input gradients "
                                "flattened and joined in input order): " + result.message;
  return result;
}

}  // namespace tapegrad
