// gradcheck's float32 mode (autograd/testing/gradcheck.h): steps and tolerances from an error estimate.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "autograd/base/checks.h"
#include "autograd/testing/detail/gradcheck_common.h"
#include "autograd/testing/gradcheck.h"

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

// The function and the shape of its result at the inputs as given, which every difference must keep.
struct FloatProbe {
  const GradcheckFunction32& fn;
  const std::vector<Tensor<float>>& inputs;
  Shape out_shape;
};

Difference difference(const FloatProbe& p, std::size_t input, std::size_t element, double h) {
  float& x = p.inputs[input].node()->value.data()[element];
  const float original = x;
  const float plus = static_cast<float>(original + h), minus = static_cast<float>(original - h);
  const auto at = [&](float value) {
    x = value;
    const Tensor<float> f = p.fn(p.inputs);
    x = original;
    detail::require_output_shape(p.out_shape, f.shape(), detail::input_label(input, p.inputs[input]) +
                                                             " moved by a finite-difference step");
    return xt::xarray<double>(xt::cast<double>(f.value()));
  };
  const xt::xarray<double> f_plus = at(plus);
  const xt::xarray<double> f_minus = at(minus);
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
//
// The spread of the neighbours counts for at most kMaxRelativeSpread * |R_k| (a NaN spread counts
// that much): the rounding floor already covers a deterministic float function's rounding, and a
// larger spread (a function with jumps between the steps, or noise) would widen the tolerance with
// it until any derivative passes. So the tolerance exceeds the rounding floor by at most
// tolerance_factor * kMaxRelativeSpread = 0.8% of the numeric value: a derivative off by 1% fails
// whatever the estimate.
constexpr double kMaxRelativeSpread = 1e-3;

struct Column {
  xt::xarray<double> value;
  xt::xarray<double> error;
};

Column column(const FloatProbe& p, std::size_t input, std::size_t element) {
  const double x = p.inputs[input].value().data()[element];
  // cbrt(epsilon) balances truncation (~h^2) against rounding (~epsilon / h) for a central difference.
  const double h0 = std::cbrt(kFloatEpsilon) * std::max(1.0, std::abs(x));
  std::array<Difference, kSteps> d;
  for (std::size_t k = 0; k < kSteps; ++k) {
    d[k] = difference(p, input, element, h0 * std::ldexp(1.0, 2 - static_cast<int>(k)));
  }
  const std::size_t n = d[0].quotient.size();
  Column result{xt::zeros<double>({n}), xt::zeros<double>({n})};
  std::array<double, kSteps - 1> r;
  for (std::size_t o = 0; o < n; ++o) {
    for (std::size_t k = 0; k + 1 < kSteps; ++k) {
      r[k] = (4.0 * d[k + 1].quotient.data()[o] - d[k].quotient.data()[o]) / 3.0;
    }
    double best = std::numeric_limits<double>::infinity();
    std::size_t chosen = 1;
    for (std::size_t k = 1; k + 1 < r.size(); ++k) {
      const double error = std::abs(r[k] - r[k - 1]) + std::abs(r[k] - r[k + 1]) + 2.0 * d[k + 1].rounding.data()[o];
      if (k > 1 && !(error < best)) continue;
      best = error;
      chosen = k;
    }
    const double spread = std::abs(r[chosen] - r[chosen - 1]) + std::abs(r[chosen] - r[chosen + 1]);
    result.value(o) = r[chosen];
    result.error(o) = std::min(kMaxRelativeSpread * std::abs(r[chosen]), spread) + 2.0 * d[chosen + 1].rounding.data()[o];
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
  const FloatProbe probe{fn, inputs, detail::deterministic_output_shape(fn, inputs)};
  detail::require_jacobian_fits(probe.out_shape, inputs);

  detail::NumericJacobian numeric(inputs.size());
  std::vector<std::vector<xt::xarray<double>>> errors(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    for (std::size_t e = 0; e < inputs[i].numel(); ++e) {
      Column c = column(probe, i, e);
      numeric[i].push_back(std::move(c.value));
      errors[i].push_back(std::move(c.error));
    }
  }
  const detail::AnalyticJacobian analytic = detail::analytic_jacobian(fn, inputs, probe.out_shape);
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
