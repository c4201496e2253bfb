// logsumexp, var and std (autograd/ops/statistics.h): values and gradients against numbers worked
// out by hand and checked against PyTorch 1.13, including its edge cases (infinite rows, n <=
// correction, zero variance); gradcheck over axes; bad inputs.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "autograd/ops/statistics.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using X = xt::xarray<double>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// A [n,1] column ({{a}, {b}} is ambiguous to xtensor).
X column(std::initializer_list<double> values) {
  X c = X::from_shape({values.size(), 1});
  std::copy(values.begin(), values.end(), c.begin());
  return c;
}

X grad_of_sum(GradientTape& tape, const Tensor<double>& y, const Tensor<double>& x) {
  tape.backward(y, X(xt::ones<double>(y.shape())));
  return x.grad();
}

// Equal element by element, NaN matching NaN; `close` allows a few ulps for transcendental values.
void expect_same(const X& actual, const X& expected, double close = 0.0) {
  ASSERT_EQ(actual.shape(), expected.shape());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = actual.data()[i], e = expected.data()[i];
    if (std::isnan(e)) EXPECT_TRUE(std::isnan(a)) << "element " << i << ": " << a;
    else if (std::isinf(e) || close == 0.0) EXPECT_EQ(a, e) << "element " << i;
    else EXPECT_NEAR(a, e, close) << "element " << i;
  }
}

TEST(Logsumexp, InfiniteRowsAsPyTorch) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  // Rows: all -inf, ordinary, holding +inf, -inf beside a finite value.
  const Tensor<double> x(X{{-kInf, -kInf}, {1.0, 2.0}, {kInf, 1.0}, {-kInf, 0.0}}, true);
  const auto y = logsumexp(x, {1});
  expect_same(y.value(), {-kInf, 2.0 + std::log1p(std::exp(-1.0)), kInf, 0.0}, 1e-15);
  // PyTorch 1.13: NaN across the -inf row and at the +inf element, sigmoid(-1), sigmoid(1), 0, 1.
  expect_same(grad_of_sum(tape, y, x), {{kNan, kNan}, {0.2689414213699951, 0.7310585786300049}, {kNan, 0.0}, {0.0, 1.0}},
              1e-15);
}

TEST(Logsumexp, LargeValuesDoNotOverflowAndKeepdims) {
  const Tensor<double> x(X{{1000.0, 1000.0}, {-1000.0, -1000.0}});
  const auto y = logsumexp(x, {-1}, true);
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  expect_same(y.value(), column({1000.0 + std::log(2.0), -1000.0 + std::log(2.0)}), 1e-12);
  // An empty group gives -inf (log of an empty sum).
  expect_same(logsumexp(Tensor<double>::zeros({2, 0}), {1}).value(), {-kInf, -kInf});
}

TEST(Logsumexp, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return logsumexp(x[0], {0, 2}); }, {random_tensor({2, 3, 4}, 71)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return logsumexp(x[0], {1}, true); }, {random_tensor({3, 5}, 72)}));
}

TEST(Var, UnbiasedAndBiasedWithGradients) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  const Tensor<double> x(X{{1.0, 1.0, 1.0}, {1.0, 2.0, 3.0}}, true);
  const auto v = var(x, {1});
  expect_same(v.value(), {0.0, 1.0});
  expect_same(grad_of_sum(tape, v, x), {{0.0, 0.0, 0.0}, {-1.0, 0.0, 1.0}});  // 2 (x - mean) / (n - 1)
  const Tensor<double> x2(X{{1.0, 1.0, 1.0}, {1.0, 2.0, 3.0}}, true);
  const auto biased = var(x2, {1}, 0, true);
  EXPECT_EQ(biased.shape(), (Shape{2, 1}));
  expect_same(biased.value(), column({0.0, 2.0 / 3.0}));
  expect_same(grad_of_sum(tape, biased, x2), {{0.0, 0.0, 0.0}, {-2.0 / 3.0, 0.0, 2.0 / 3.0}});
  // Over all elements: [1,2,3,4] has squared deviations 5, over n - 1 = 3.
  EXPECT_DOUBLE_EQ(var(Tensor<double>(X{{1.0, 2.0}, {3.0, 4.0}})).item(), 5.0 / 3.0);
}

TEST(Var, GroupsNoLargerThanTheCorrectionAsPyTorch) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  // n = correction = 1: 0/0 in the value and 2/0 * 0 in the gradient, NaN both (PyTorch 1.13).
  const Tensor<double> one(column({1.0, 2.0}), true);
  const auto v = var(one, {1});
  expect_same(v.value(), {kNan, kNan});
  expect_same(grad_of_sum(tape, v, one), column({kNan, kNan}));
  // correction 3 for n = 2: the value divides by max(0, -1) = 0 (inf) and the gradient by -1.
  const Tensor<double> two(X{{1.0, 2.0}}, true);
  const auto v3 = var(two, {1}, 3);
  expect_same(v3.value(), {kInf});
  expect_same(grad_of_sum(tape, v3, two), {{1.0, -1.0}});
}

TEST(Std, ZeroVarianceHasZeroGradientAsPyTorch) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  const Tensor<double> x(X{{1.0, 1.0, 1.0}, {1.0, 2.0, 3.0}}, true);
  const auto s = std(x, {1});
  expect_same(s.value(), {0.0, 1.0});
  expect_same(grad_of_sum(tape, s, x), {{0.0, 0.0, 0.0}, {-0.5, 0.0, 0.5}});  // constant row: 0, not NaN
  EXPECT_DOUBLE_EQ(std(Tensor<double>(X{{1.0, 2.0}, {3.0, 4.0}})).item(), std::sqrt(5.0 / 3.0));
}

TEST(VarStd, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return var(x[0], {0, 2}); }, {random_tensor({2, 3, 4}, 73)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return var(x[0], {-1}, 0, true); }, {random_tensor({3, 4}, 74)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return std(x[0], {1}); }, {random_tensor({3, 4}, 75)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return std(x[0]); }, {random_tensor({2, 3}, 76)}));
}

TEST(Statistics, BadInputs) {
  const auto x = Tensor<double>::zeros({2, 3});
  EXPECT_TRUE(throws_with<ValueError>([&] { logsumexp(x, {2}); }, {"logsumexp", "axis 2", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { var(x, {0, -2}); }, {"var", "axis 0", "twice"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { std(x, {1}, -1); }, {"std", "correction", "-1", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { var(Tensor<double>()); }, {"var", "'a'", "undefined"}));
}

}  // namespace
}  // namespace tapegrad
