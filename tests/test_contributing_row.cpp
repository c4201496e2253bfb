// CONTRIBUTING.md's example row, compiled as the guide writes it and checked as the table's own
// rows are. tests/CMakeLists.txt copies the row out of CONTRIBUTING.md into contributing_row.h
// (TAPEGRAD_CONTRIBUTING_ROWS), and the macros that turn the table into ops
// (autograd/ops/detail/pointwise_rows.h) turn it into one here.
#include <cmath>
#include <limits>

#include "autograd/ops/detail/pointwise_rows.h"
#include "autograd/testing/gradcheck_gtest.h"
#include "contributing_row.h"
#include "tests/support/pointwise_domain.h"

namespace tapegrad {

TAPEGRAD_CONTRIBUTING_ROWS(TAPEGRAD_DEFINE_UNARY)

namespace {

// Forward against the reference at every tail length, then gradcheck and gradgradcheck.
template <class Op, class Reference>
void check_row(const char* name, Op op, Reference reference, testing::PointwiseDomain domain) {
  for (std::size_t n = 0; n <= 3 * kernels::simd::Batch<double>::size + 1; ++n) {
    const Tensor<double> x(testing::pointwise_inputs<double>(domain, {n}, 40 + n));
    const xt::xarray<double> y = op(x).value();
    for (std::size_t i = 0; i < n; ++i) {
      const double expected = reference(x.value()(i));
      EXPECT_NEAR(y(i), expected, 4 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(expected)))
          << name << " at x = " << x.value()(i);
    }
  }
  const auto f = [op](const std::vector<Tensor<double>>& x) { return op(x[0]); };
  const Tensor<double> x(testing::pointwise_inputs<double>(domain, {2, 3}, 50), true);
  EXPECT_GRADCHECK(f, {x});
  EXPECT_GRADGRADCHECK(f, {x});
}

TEST(Contributing, TheGuidesExampleRowIsAnOpThatPassesTheTablesChecks) {
  int rows = 0;
#define TAPEGRAD_CHECK_ROW(name, forward, reference_formula, derivative, domain)               \
  check_row(                                                                                   \
      #name, [](const Tensor<double>& x) { return name(x, std::source_location::current()); }, \
      [](double x) {                                                                           \
        using T = double;                                                                      \
        return reference_formula;                                                              \
      },                                                                                       \
      testing::PointwiseDomain::domain);                                                       \
  ++rows;
  TAPEGRAD_CONTRIBUTING_ROWS(TAPEGRAD_CHECK_ROW)
#undef TAPEGRAD_CHECK_ROW
  EXPECT_EQ(rows, 1);  // the guide shows one row
}

}  // namespace
}  // namespace tapegrad
