#include <cmath>
#include <limits>

#include "autograd/ops/elementwise.h"
#include "autograd/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using testing::passes_gradcheck;
using testing::random_tensor;
using testing::throws_with;
using Inputs = std::vector<Tensor<double>>;

// Shape pairs every binary op is checked over: equal, broadcast both ways, size-1 axes, scalars.
const std::vector<std::pair<Shape, Shape>> kBinaryShapes = {
    {{3}, {3}}, {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{4, 1, 3}, {2, 1}}, {{1}, {2, 3}}, {{}, {2, 2}}, {{2, 1, 3}, {1, 4, 1}},
};

TEST(Elementwise, ForwardMatchesHandComputed) {
  Tensor<double> a(xt::xarray<double>{{1.0, 2.0}, {3.0, 4.0}});
  Tensor<double> b(xt::xarray<double>{10.0, 20.0});
  EXPECT_EQ((a + b).value(), (xt::xarray<double>{{11.0, 22.0}, {13.0, 24.0}}));
  EXPECT_EQ((a - b).value(), (xt::xarray<double>{{-9.0, -18.0}, {-7.0, -16.0}}));
  EXPECT_EQ((a * b).value(), (xt::xarray<double>{{10.0, 40.0}, {30.0, 80.0}}));
  EXPECT_EQ((b / a).value(), (xt::xarray<double>{{10.0, 10.0}, {10.0 / 3.0, 5.0}}));
  EXPECT_EQ((2.0 - a).value(), (xt::xarray<double>{{1.0, 0.0}, {-1.0, -2.0}}));
  EXPECT_EQ((6.0 / a).value(), (xt::xarray<double>{{6.0, 3.0}, {2.0, 1.5}}));
  EXPECT_EQ(pow(a, 2.0).value(), (xt::xarray<double>{{1.0, 4.0}, {9.0, 16.0}}));
  EXPECT_DOUBLE_EQ(exp(a).value()(1, 0), std::exp(3.0));
  EXPECT_DOUBLE_EQ(log(a).value()(1, 1), std::log(4.0));
  EXPECT_DOUBLE_EQ(sqrt(a).value()(1, 1), 2.0);
  EXPECT_EQ(abs(-a).value(), a.value());
}

// The gradient of abs at NaN, zero and both signs, in T.
template <class T>
void expect_abs_gradient_at_nan() {
  const Tensor<T> a(xt::xarray<T>{std::numeric_limits<T>::quiet_NaN(), T(-1), T(0), T(2)}, true);
  GradientTape tape;
  tape.backward(abs(a), xt::xarray<T>{T(3), T(3), T(3), T(3)});
  // torch.abs(x).backward(torch.full((4,), 3.)) for x = [nan, -1, 0, 2], float32 and float64:
  // x.grad = [0, -3, 0, 3] (sgn(nan) is 0).
  EXPECT_EQ(a.grad(), (xt::xarray<T>{T(0), T(-3), T(0), T(3)}));
}

TEST(Elementwise, AbsGradientIsZeroAtNaNAsPyTorch) {
  expect_abs_gradient_at_nan<float>();
  expect_abs_gradient_at_nan<double>();
}

TEST(Elementwise, FloatScalarLiteralsWork) {
  Tensor<float> a(xt::xarray<float>{1.0f, 2.0f});
  EXPECT_EQ((a * 2.0 + 1.0).value(), (xt::xarray<float>{3.0f, 5.0f}));
}

TEST(Elementwise, GradcheckBinaryOpsOverBroadcastShapes) {
  using BinaryOp = Tensor<double> (*)(const Tensor<double>&, const Tensor<double>&);
  const std::vector<std::pair<const char*, BinaryOp>> ops = {
      {"add", [](const Tensor<double>& a, const Tensor<double>& b) { return add(a, b); }},
      {"sub", [](const Tensor<double>& a, const Tensor<double>& b) { return sub(a, b); }},
      {"mul", [](const Tensor<double>& a, const Tensor<double>& b) { return mul(a, b); }},
      {"div", [](const Tensor<double>& a, const Tensor<double>& b) { return div(a, b); }}};
  for (const auto& [name, op] : ops) {
    for (const auto& [sa, sb] : kBinaryShapes) {
      SCOPED_TRACE(std::string(name) + " " + format_shape(sa) + " " + format_shape(sb));
      // Divisors kept away from 0 so the finite differences are well conditioned.
      EXPECT_TRUE(passes_gradcheck([op](const Inputs& x) { return op(x[0], x[1]); },
                                   {random_tensor(sa, 1), random_tensor(sb, 2, true, 0.5, 2.0)}));
    }
  }
}

TEST(Elementwise, GradcheckPowBothArguments) {
  for (const auto& [sa, sb] : kBinaryShapes) {
    SCOPED_TRACE(format_shape(sa) + " " + format_shape(sb));
    EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return pow(x[0], x[1]); },
                                 {random_tensor(sa, 3, true, 0.5, 2.0), random_tensor(sb, 4, true, -1.5, 1.5)}));
  }
}

TEST(Elementwise, GradcheckScalarAndUnaryOps) {
  const std::vector<std::pair<const char*, std::function<Tensor<double>(const Tensor<double>&)>>> ops = {
      {"add_scalar", [](const auto& a) { return a + 3.0; }},  {"sub_scalar", [](const auto& a) { return a - 3.0; }},
      {"rsub_scalar", [](const auto& a) { return 3.0 - a; }}, {"mul_scalar", [](const auto& a) { return a * -2.5; }},
      {"div_scalar", [](const auto& a) { return a / 4.0; }},  {"rdiv_scalar", [](const auto& a) { return 2.0 / a; }},
      {"pow_scalar", [](const auto& a) { return pow(a, 2.5); }}, {"neg", [](const auto& a) { return -a; }},
      {"exp", [](const auto& a) { return exp(a); }},          {"log", [](const auto& a) { return log(a); }},
      {"sqrt", [](const auto& a) { return sqrt(a); }},        {"abs", [](const auto& a) { return abs(a - 1.25); }},
  };
  for (const auto& [name, op] : ops) {
    for (const Shape& shape : std::vector<Shape>{{}, {5}, {2, 3}, {2, 1, 3}}) {
      SCOPED_TRACE(std::string(name) + " " + format_shape(shape));
      // Positive inputs: log, sqrt, pow and rdiv are defined there.
      EXPECT_TRUE(passes_gradcheck([op](const Inputs& x) { return op(x[0]); }, {random_tensor(shape, 5, true, 0.5, 2.0)}));
    }
  }
}

TEST(Elementwise, GradcheckCastRoundTrip) {
  // double -> float -> double loses precision, so check with a step and tolerance fit for float.
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return (x[0].to<float>() * 3.0).to<double>(); },
                               {random_tensor({2, 3}, 6)}, {.eps = 1e-2, .atol = 1e-3, .rtol = 1e-3}));
}

TEST(Elementwise, ReusedInputAccumulatesGradient) {
  Tensor<double> a(xt::xarray<double>{3.0}, true);
  GradientTape tape;
  tape.backward(a * a + a);
  EXPECT_DOUBLE_EQ(a.grad()(0), 7.0);  // d(a^2 + a)/da = 2a + 1
}

TEST(Elementwise, NonBroadcastableShapesThrowNamingOpAndShapes) {
  const auto a = random_tensor({2, 3}, 1);
  const auto b = random_tensor({4}, 2);
  EXPECT_TRUE(throws_with<ShapeError>([&] { add(a, b); }, {"add", "[2,3]", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { sub(a, b); }, {"sub", "[2,3]", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mul(a, b); }, {"mul", "[2,3]", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { div(a, b); }, {"div", "[2,3]", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { pow(a, b); }, {"pow", "[2,3]", "[4]"}));
}

TEST(Elementwise, UndefinedInputThrowsNamingOp) {
  EXPECT_TRUE(throws_with<ValueError>([] { exp(Tensor<double>()); }, {"exp", "undefined"}));
  EXPECT_TRUE(throws_with<ValueError>([] { add(Tensor<double>(), Tensor<double>::ones({2})); }, {"add", "'a'"}));
}

}  // namespace
}  // namespace tapegrad
