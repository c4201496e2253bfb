#include "autograd/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/detail/checks.h"
#include "autograd/kernels/indices.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"

namespace tapegrad {

namespace {

std::string format_index(std::size_t flat, const Shape& shape) {
  return format_shape(kernels::unravel_index(flat, shape));
}

std::string input_label(std::size_t i, const Tensor<double>& t) {
  return "input " + std::to_string(i) + (t.name().empty() ? "" : " ('" + t.name() + "')");
}

// Numeric Jacobian column for one input element: (f(x + eps) - f(x - eps)) / 2 eps, flattened.
// Runs before gradcheck's own tape exists, so nothing records it; fn may run a tape of its own
// (gradgradcheck's function differentiates inside).
xt::xarray<double> central_difference(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                                      std::size_t input, std::size_t element, double eps) {
  double& x = inputs[input].node()->value.data()[element];
  const double original = x;
  x = original + eps;
  const xt::xarray<double> plus = fn(inputs).value();
  x = original - eps;
  const xt::xarray<double> minus = fn(inputs).value();
  x = original;
  return (plus - minus) / (2.0 * eps);
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& options) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw ValueError("gradcheck: input " + std::to_string(i) + " is an undefined tensor");
    if (!inputs[i].is_leaf()) {
      throw ValueError("gradcheck: " + input_label(i, inputs[i]) + " is the output of an op; pass leaf tensors");
    }
  }
  // Nothing to compare would be a silent pass.
  if (std::none_of(inputs.begin(), inputs.end(), [](const auto& x) { return x.requires_grad(); })) {
    throw ValueError("gradcheck: no input requires a gradient (of " + std::to_string(inputs.size()) +
                     " inputs); mark the ones to check with set_requires_grad(true)");
  }
  const auto check_option = [](const char* name, double value, bool positive) {
    if (!std::isfinite(value) || value < 0.0 || (positive && value == 0.0)) {
      throw ValueError(std::string("gradcheck: option ") + name + " must be finite and " + (positive ? "> 0" : ">= 0") +
                       ", got " + detail::format_number(value));
    }
  };
  check_option("eps", options.eps, true);
  check_option("atol", options.atol, false);
  check_option("rtol", options.rtol, false);

  std::size_t out_numel = 0;
  {
    const Tensor<double> plain_output = fn(inputs);
    detail::require_defined(plain_output, "gradcheck", "the function's result");
    out_numel = plain_output.numel();
  }
  // One Jacobian row per output element and one column per input element that is checked, twice
  // (numeric and analytic): refuse up front, naming the sizes, rather than fail part-way (a
  // 90000-element input and output need 8.1e9 entries, 60 GiB).
  std::size_t columns = 0;
  for (const auto& x : inputs)
    if (x.requires_grad()) columns += x.numel();  // no overflow: these elements exist in memory
  detail::allocatable(Shape{out_numel, columns}, sizeof(double), "gradcheck",
                      "the Jacobian [output elements, input elements]");

  // Numeric columns first, while no tape of gradcheck's is alive to record them.
  std::vector<std::vector<xt::xarray<double>>> numeric(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    for (std::size_t e = 0; e < inputs[i].numel(); ++e) {
      numeric[i].push_back(central_difference(fn, inputs, i, e, options.eps));
    }
  }

  // Analytic Jacobian, one row per output element: analytic[i] has shape [numel(out), numel(input i)].
  GradientTape tape(/*persistent=*/true);
  const Tensor<double> output = fn(inputs);
  std::vector<xt::xarray<double>> analytic(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].requires_grad()) analytic[i] = xt::zeros<double>({out_numel, inputs[i].numel()});
  }
  if (output.requires_grad()) {
    for (std::size_t o = 0; o < out_numel; ++o) {
      for (const auto& x : inputs) x.node()->clear_grad();
      xt::xarray<double> seed = xt::zeros<double>(output.value().shape());
      seed.data()[o] = 1.0;
      tape.backward(output, seed);
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].requires_grad() || !inputs[i].has_grad()) continue;  // no path: a zero row
        const auto& g = inputs[i].grad();
        std::copy(g.data(), g.data() + g.size(), &analytic[i](o, 0));
      }
    }
    for (const auto& x : inputs) x.node()->clear_grad();
  }

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    for (std::size_t e = 0; e < inputs[i].numel(); ++e) {
      for (std::size_t o = 0; o < out_numel; ++o) {
        const double a = analytic[i](o, e);
        const double n = numeric[i][e].data()[o];
        if (std::isfinite(a) && std::isfinite(n) && std::abs(a - n) <= options.atol + options.rtol * std::abs(n)) {
          continue;
        }
        std::ostringstream msg;
        msg.precision(10);
        msg << "gradcheck: Jacobian mismatch for " << input_label(i, inputs[i]) << " of shape "
            << format_shape(inputs[i].shape()) << ", element " << format_index(e, inputs[i].shape())
            << ", output element " << format_index(o, output.shape()) << " of output shape "
            << format_shape(output.shape()) << ": analytic " << a << ", numeric " << n << " (atol " << options.atol
            << ", rtol " << options.rtol << ", eps " << options.eps << ")";
        return {false, msg.str()};
      }
    }
  }
  return {};
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
    detail::require_defined(out, "gradgradcheck", "the function's result");
    out_shape = out.shape();
  }
  // A fixed direction v of the output's shape, not a multiple of ones, so every output element
  // weighs differently; it is an input of the checked function too (J^T v is linear in v).
  Generator direction_gen(20261123);
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
