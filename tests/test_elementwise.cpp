#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

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
      EXPECT_TRUE(passes_gradcheck([op = op](const Inputs& x) { return op(x[0], x[1]); },
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
      EXPECT_TRUE(passes_gradcheck([op = op](const Inputs& x) { return op(x[0]); }, {random_tensor(shape, 5, true, 0.5, 2.0)}));
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

// Values from PyTorch 1.13. Gradients of a pair of ops f(a, b), weighted by w.
struct PairGrads {
  xt::xarray<double> y, da, db;
};
PairGrads run_pair(Tensor<double> (*op)(const Tensor<double>&, const Tensor<double>&, CallSite),
                   const xt::xarray<double>& a_value, const xt::xarray<double>& b_value, const xt::xarray<double>& w) {
  const Tensor<double> a(a_value, true), b(b_value, true);
  GradientTape tape;
  const Tensor<double> y = op(a, b, std::source_location::current());
  tape.backward(sum(mul(y, Tensor<double>(w))));
  return {y.value(), a.grad(), b.grad()};
}

// Bits, so that -0. and 0. differ and NaN equals NaN.
bool same_bits_or_nan(const xt::xarray<double>& x, const xt::xarray<double>& y) {
  if (x.shape() != y.shape()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x.data()[i]) ? !std::isnan(y.data()[i]) : std::bit_cast<std::uint64_t>(x.data()[i]) != std::bit_cast<std::uint64_t>(y.data()[i]))
      return false;
  }
  return true;
}

TEST(MaximumMinimum, PropagateNaNKeepTheFirstAtTiesAndSplitTheGradientThere) {
  const double nan = std::nan("");
  // Seven cases, three times over: the SIMD batches as well as the scalar tail see each one.
  const auto thrice = [](const xt::xarray<double>& v) { return xt::xarray<double>(xt::concatenate(xt::xtuple(v, v, v))); };
  const xt::xarray<double> a = thrice({1.0, 2.0, 3.0, nan, 1.0, -0.0, 0.0}), b = thrice({2.0, 2.0, 1.0, 1.0, nan, 0.0, -0.0});
  const xt::xarray<double> w = thrice({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0});
  // torch.maximum(a, b): [2, 2, 3, nan, nan, -0., 0.]; a.grad [0, 1, 3, 4, 5, 3, 3.5], b.grad [1, 1, 0, 4, 5, 3, 3.5].
  const PairGrads mx = run_pair(&maximum<double>, a, b, w);
  EXPECT_TRUE(same_bits_or_nan(mx.y, thrice({2.0, 2.0, 3.0, nan, nan, -0.0, 0.0})));
  EXPECT_EQ(mx.da, thrice({0.0, 1.0, 3.0, 4.0, 5.0, 3.0, 3.5}));
  EXPECT_EQ(mx.db, thrice({1.0, 1.0, 0.0, 4.0, 5.0, 3.0, 3.5}));
  const PairGrads mn = run_pair(&minimum<double>, a, b, w);
  EXPECT_TRUE(same_bits_or_nan(mn.y, thrice({1.0, 2.0, 1.0, nan, nan, -0.0, 0.0})));
  EXPECT_EQ(mn.da, thrice({1.0, 1.0, 0.0, 4.0, 5.0, 3.0, 3.5}));
  EXPECT_EQ(mn.db, thrice({0.0, 1.0, 3.0, 4.0, 5.0, 3.0, 3.5}));
  // Broadcast, with ties: torch.maximum([[1], [2]], [1, 2, 3]) gives a.grad [[0.5], [1.5]], b.grad [0.5, 1.5, 2].
  xt::xarray<double> column{1.0, 2.0};
  column.reshape({2, 1});
  const PairGrads wide = run_pair(&maximum<double>, column, xt::xarray<double>{1.0, 2.0, 3.0}, xt::ones<double>({2, 3}));
  EXPECT_EQ(wide.y, (xt::xarray<double>{{1.0, 2.0, 3.0}, {2.0, 2.0, 3.0}}));
  EXPECT_EQ(wide.da, xt::xarray<double>(column - 0.5));
  EXPECT_EQ(wide.db, (xt::xarray<double>{0.5, 1.5, 2.0}));
}

TEST(DivRoundingMode, TruncAndFloorMatchPyTorchWithZeroGradient) {
  const double inf = std::numeric_limits<double>::infinity();
  const xt::xarray<double> a{7.0, -7.0, 7.0, -7.0, 5.5, -0.5, 0.5, -1.0, 1.0, 1.0, -3.0};
  const xt::xarray<double> b{2.0, 2.0, -2.0, -2.0, 0.5, 1.0, -1.0, inf, 0.1, 0.0, 1.5};
  const xt::xarray<double> ones = xt::ones<double>({a.size()});
  const auto trunc = [](const Tensor<double>& x, const Tensor<double>& y, CallSite where) {
    return div(x, y, RoundingMode::trunc, where);
  };
  const auto floor = [](const Tensor<double>& x, const Tensor<double>& y, CallSite where) {
    return div(x, y, RoundingMode::floor, where);
  };
  const PairGrads t = run_pair(+trunc, a, b, ones);
  EXPECT_TRUE(same_bits_or_nan(t.y, xt::xarray<double>{3.0, -3.0, -3.0, 3.0, 11.0, -0.0, -0.0, -0.0, 10.0, inf, -2.0}));
  EXPECT_EQ(t.da, xt::zeros<double>({a.size()}));
  EXPECT_EQ(t.db, xt::zeros<double>({a.size()}));
  // Python's //: 1.0 // 0.1 is 9 (a / b rounds to 10.0 first); -1 // inf is -1.
  const PairGrads f = run_pair(+floor, a, b, ones);
  EXPECT_TRUE(same_bits_or_nan(f.y, xt::xarray<double>{3.0, -4.0, -4.0, 3.0, 11.0, -1.0, -1.0, -1.0, 9.0, inf, -2.0}));
  EXPECT_EQ(f.da, xt::zeros<double>({a.size()}));
  EXPECT_EQ(f.db, xt::zeros<double>({a.size()}));
  EXPECT_TRUE(same_bits_or_nan(div(Tensor<double>(xt::xarray<double>{-0.0, inf}), Tensor<double>(xt::xarray<double>{3.0, 2.0}),
                            RoundingMode::floor).value(),
                        xt::xarray<double>{-0.0, std::nan("")}));
  const Tensor<double> x = random_tensor({2, 3}, 31), y = random_tensor({3}, 32, true, 0.5, 1.5);
  EXPECT_EQ(div(x, y, RoundingMode::none).value(), div(x, y).value());
}

TEST(PowScalarBase, ValuesAndGradientMatchPyTorch) {
  const xt::xarray<double> e{0.0, 1.0, -1.0, 2.5};
  const auto run = [&e](double base) {
    const Tensor<double> x(e, true);
    GradientTape tape;
    const Tensor<double> y = pow(base, x);
    tape.backward(sum(y));
    return std::pair{y.value(), x.grad()};
  };
  const auto [y2, g2] = run(2.0);
  EXPECT_TRUE(xt::allclose(y2, xt::xarray<double>{1.0, 2.0, 0.5, std::pow(2.0, 2.5)}));
  EXPECT_TRUE(xt::allclose(g2, y2 * std::log(2.0)));
  // Base 0: torch.pow(0., x) is [1, 0, inf, 0] and its gradient [0, 0, -inf, 0].
  const auto [y0, g0] = run(0.0);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(y0, (xt::xarray<double>{1.0, 0.0, inf, 0.0}));
  EXPECT_EQ(g0, (xt::xarray<double>{0.0, 0.0, -inf, 0.0}));
  EXPECT_EQ(run(1.0).second, xt::zeros<double>({4}));
  EXPECT_TRUE(xt::all(xt::isnan(run(-2.0).second)));  // log of a negative base
  EXPECT_TRUE(passes_gradcheck([](const Inputs& in) { return pow(3.0, in[0]); }, {random_tensor({2, 3}, 33)}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

TAPEGRAD_OP_SPEC(cast) {
  OpSpec s("cast", "operators");
  s.no_pytorch = "a dtype conversion (OpInfo 'to' samples devices and dtypes); the samples are float64 only";
  s.errors = {error_input<ValueError>("cast_undefined", "`cast<float>`", "undefined a",
                                      [] { return cast<float>(bad_inputs::undefined()); }, {"cast", "'a'", "undefined"})};
  s.samples = {
      {"cast_identity", [](const auto& x) { return mul(x[0].template to<ElementOf<decltype(x)>>(), x[0]); }, [] { return V{leaf({3}, 31)}; }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
