// gradcheck's float32 mode (autograd/gradcheck.h): steps and tolerances from an error estimate.
#include <array>
#include <cmath>
#include <limits>

#include "autograd/validation.h"
#include "autograd/detail/gradcheck_common.h"
#include "autograd/gradcheck.h"

namespace tapegrad {

namespace {

constexpr double kFloatEpsilon = std::numeric_limits<float>::epsilon();
// Steps h0 * 2^(2-k): two above the balance point h0, two below.
constexpr std::size_t kSteps = 5;

// One central difference in float32 at step h, with the step the arithmetic really took
// (fl(x + h) - fl(x - h), not 2h) and its rounding floor.
struct Difference {
  xt::xarray<double> quotient;  // (f(x + h) - f(x - h)) / (x+ - x-), flattened
  xt::xarray<double> rounding;  // float epsilon * (|f(x + h)| + |f(x - h)|) / (x+ - x-)
};

Difference difference(const GradcheckFunction32& fn, const std::vector<Tensor<float>>& inputs, std::size_t input,
                      std::size_t element, double h) {
  float& x = inputs[input].node()->value.data()[element];
  const float original = x;
  const float plus = static_cast<float>(original + h), minus = static_cast<float>(original - h);
  x = plus;
  const xt::xarray<double> f_plus = xt::cast<double>(fn(inputs).value());
  x = minus;
  const xt::xarray<double> f_minus = xt::cast<double>(fn(inputs).value());
  x = original;
  const double step = static_cast<double>(plus) - static_cast<double>(minus);
  return {xt::xarray<double>((f_plus - f_minus) / step),
          xt::xarray<double>(kFloatEpsilon * (xt::abs(f_plus) + xt::abs(f_minus)) / step)};
}

// The numeric column of one input element and the estimated error of each of its entries.
// Richardson extrapolation R_k = (4 D(h_k / 2) - D(h_k)) / 3 of each adjacent pair of steps
// cancels the h^2 term of the truncation error; what is left differs between neighbouring R_k by
// the rounding noise and the h^4 term, so |R_k - R_k-1| + |R_k - R_k+1| estimates the error of R_k
// (numdifftools estimates its extrapolations' errors the same way), plus a rounding floor of
// 2 * epsilon * (|f(x + h)| + |f(x - h)|) / 2h at the smaller step (the extrapolation's noise is
// (4 r(h/2) + r(h)) / 3 = 2 r(h/2)). Per output element, the R_k with the smallest estimate wins.
struct Column {
  xt::xarray<double> value;
  xt::xarray<double> error;
};

Column column(const GradcheckFunction32& fn, const std::vector<Tensor<float>>& inputs, std::size_t input,
              std::size_t element) {
  const double x = inputs[input].value().data()[element];
  // cbrt(epsilon) balances truncation (~h^2) against rounding (~epsilon / h) for a central difference.
  const double h0 = std::cbrt(kFloatEpsilon) * std::max(1.0, std::abs(x));
  std::array<Difference, kSteps> d;
  for (std::size_t k = 0; k < kSteps; ++k) {
    d[k] = difference(fn, inputs, input, element, h0 * std::ldexp(1.0, 2 - static_cast<int>(k)));
  }
  const std::size_t n = d[0].quotient.size();
  Column result{xt::zeros<double>({n}), xt::zeros<double>({n})};
  std::array<double, kSteps - 1> r;
  for (std::size_t o = 0; o < n; ++o) {
    for (std::size_t k = 0; k + 1 < kSteps; ++k) {
      r[k] = (4.0 * d[k + 1].quotient.data()[o] - d[k].quotient.data()[o]) / 3.0;
    }
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t k = 1; k + 1 < r.size(); ++k) {
      const double error = std::abs(r[k] - r[k - 1]) + std::abs(r[k] - r[k + 1]) + 2.0 * d[k + 1].rounding.data()[o];
      if (k > 1 && !(error < best)) continue;
      best = error;
      result.value(o) = r[k];
      result.error(o) = error;
    }
  }
  return result;
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFunction32& fn, const std::vector<Tensor<float>>& inputs,
                          const Float32GradcheckOptions& options) {
  detail::validate_inputs(inputs, "gradcheck");
  if (!std::isfinite(options.tolerance_factor) || options.tolerance_factor <= 0.0) {
    throw ValueError("gradcheck: option tolerance_factor must be finite and > 0, got " +
                     format_number(options.tolerance_factor));
  }
  if (auto failure = detail::check_accumulation_and_integrity(fn, inputs)) return {false, *failure, std::nullopt};
  detail::require_jacobian_fits(detail::checked_output_shape(fn, inputs), inputs);

  detail::NumericJacobian numeric(inputs.size());
  std::vector<std::vector<xt::xarray<double>>> errors(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    for (std::size_t e = 0; e < inputs[i].numel(); ++e) {
      Column c = column(fn, inputs, i, e);
      numeric[i].push_back(std::move(c.value));
      errors[i].push_back(std::move(c.error));
    }
  }
  const detail::AnalyticJacobian analytic = detail::analytic_jacobian(fn, inputs);
  // The analytic side rounds too: a few float epsilons of the values compared.
  const auto tolerance = [&](std::size_t i, std::size_t e, std::size_t o, double a, double n) {
    return options.tolerance_factor * (errors[i][e].data()[o] + kFloatEpsilon * (std::abs(a) + std::abs(n)));
  };
  const auto worst = detail::worst_element(analytic, numeric, tolerance);
  if (!worst) return {};
  return detail::report(*worst, analytic, inputs, errors[worst->input][worst->element].data()[worst->output],
                        "float32 mode: Richardson extrapolation of central differences at the pair of steps with "
                        "the smallest estimated error; tolerance " + format_number(options.tolerance_factor) +
                            " * (estimated error + float epsilon * (|analytic| + |numeric|))");
}

}  // namespace tapegrad
