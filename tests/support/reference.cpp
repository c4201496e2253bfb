#include "tests/support/reference.h"

#include <cmath>
#include <limits>

namespace tapegrad::testing {

Tensor<double> random_tensor(const Shape& shape, std::uint64_t seed, bool requires_grad, double low, double high) {
  Generator gen(seed);
  return Tensor<double>::uniform(shape, gen, low, high, requires_grad);
}

::testing::AssertionResult passes_gradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                                            const GradcheckOptions& options) {
  return gradcheck_assertion(gradcheck(fn, inputs, options));
}

double max_abs_diff(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a.data()[i] - b.data()[i]);
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, d);
  }
  return worst;
}

}  // namespace tapegrad::testing
