#include "autograd/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/detail/checks.h"
#include "autograd/kernels/indices.h"
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
xt::xarray<double> central_difference(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                                      std::size_t input, std::size_t element, double eps) {
  NoGradGuard no_recording;
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

  // Analytic Jacobian, one row per output element: analytic[i] has shape [numel(out), numel(input i)].
  GradientTape tape(/*persistent=*/true);
  const Tensor<double> output = fn(inputs);
  detail::require_defined(output, "gradcheck", "the function's result");
  const std::size_t out_numel = output.numel();
  // One Jacobian row per output element and one column per input element that is checked: refuse
  // up front, naming the sizes, rather than fail part-way (a 90000-element input and output need
  // 8.1e9 entries, 60 GiB).
  std::size_t columns = 0;
  for (const auto& x : inputs)
    if (x.requires_grad()) columns += x.numel();  // no overflow: these elements exist in memory
  detail::allocatable(Shape{out_numel, columns}, sizeof(double), "gradcheck",
                      "the Jacobian [output elements, input elements]");
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
      const xt::xarray<double> numeric = central_difference(fn, inputs, i, e, options.eps);
      for (std::size_t o = 0; o < out_numel; ++o) {
        const double a = analytic[i](o, e);
        const double n = numeric.data()[o];
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

}  // namespace tapegrad
