// Every sample of every op spec (tests/ops/op_spec.h) and every nn module (module_cases.cpp):
// gradcheck; gradgradcheck against central differences of the first derivative; the first
// derivative the same, bit for bit, whether or not the backward is recorded
// (GradientOptions::create_graph); jvp against vjp. Every op (modules aside) also: float32
// against float64, and the same bits at one and two threads.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/core/custom_op.h"
#include "autograd/ops/functional.h"
#include "autograd/kernels/parallel.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_case.h"
#include "tests/ops/op_spec.h"
#include "tests/support/thread_count.h"
#include "tests/ops/values.h"

namespace tapegrad::testing {

std::vector<OpCase> op_cases() {
  std::vector<OpCase> all;
  for (const OpSpec& spec : op_specs()) {
    for (OpCase c : spec.samples) {
      c.twice_differentiable = spec.differentiable == Differentiable::twice;
      c.deterministic = spec.deterministic;
      c.float32_tolerance = spec.float32_tolerance;
      all.push_back(std::move(c));
    }
  }
  return all;
}

namespace {

class EveryOp : public ::testing::TestWithParam<OpCase> {};

// The gradients of sum(fn(x) * v) for a fixed v, with or without create_graph. With
// `unheld_intermediates`, every differentiated input is first made an intermediate (x * 1.0, the
// same bits) whose handles are gone before backward: the tape then holds each intermediate's
// value only where an op's backward reads it (detail::Edge).
std::vector<Tensor<double>> first_derivative(const OpCase& c, const std::vector<Tensor<double>>& x, bool create_graph,
                                             bool unheld_intermediates = false) {
  std::vector<Tensor<double>> sources;
  for (const auto& t : x)
    if (t.requires_grad()) sources.push_back(t);
  GradientTape tape;
  Tensor<double> out;
  if (unheld_intermediates) {
    std::vector<Tensor<double>> through;
    for (const auto& t : x) through.push_back(t.requires_grad() ? mul(t, 1.0) : t);
    out = c.fn(through);
  } else {
    out = c.fn(x);
  }
  Generator gen(7);
  const Tensor<double> v = Tensor<double>::uniform(out.shape(), gen, 0.5, 1.5);
  return tape.gradient(sum(mul(out, v)), sources, {.create_graph = create_graph});
}

// Each gradient of `actual` has the bits of the same one of `expected`.
void expect_same_bits(const std::vector<Tensor<double>>& expected, const std::vector<Tensor<double>>& actual,
                      const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(expected[i].shape(), actual[i].shape()) << "source " << i;
    EXPECT_EQ(std::memcmp(expected[i].value().data(), actual[i].value().data(), expected[i].numel() * sizeof(double)), 0)
        << "source " << i << ": " << what;
  }
}

TEST_P(EveryOp, FirstDerivativeIsBitIdenticalWithCreateGraph) {
  const OpCase& c = GetParam();
  const auto x = c.inputs();
  expect_same_bits(first_derivative(c, x, false), first_derivative(c, x, true),
                   "the recorded backward computes other bits than the first-order one");
}

// A formula that reads a value it did not keep would fail or differ here.
TEST_P(EveryOp, FirstDerivativeIsTheSameThroughIntermediatesNobodyHolds) {
  const OpCase& c = GetParam();
  const auto x = c.inputs();
  const auto direct = first_derivative(c, x, false);
  expect_same_bits(direct, first_derivative(c, x, false, /*unheld_intermediates=*/true), "through intermediates");
  expect_same_bits(direct, first_derivative(c, x, true, /*unheld_intermediates=*/true),
                   "through intermediates, create_graph");
}

TEST_P(EveryOp, Gradcheck) {
  const OpCase& c = GetParam();
  const auto result = gradcheck(c.fn, c.inputs(), c.options);
  EXPECT_TRUE(result) << result.message;
}

TEST_P(EveryOp, Gradgradcheck) {
  const OpCase& c = GetParam();
  if (!c.twice_differentiable) GTEST_SKIP() << "its spec says it is differentiable once";
  const auto result = gradgradcheck(c.fn, c.inputs(), c.options);
  EXPECT_TRUE(result) << result.message;
}

// The case as a function of its differentiated inputs alone (the functional API differentiates
// every input it is given), with the constant inputs filled in.
struct DifferentiatedInputs {
  std::vector<Tensor<double>> all, differentiated;
  TensorFunction<double> fn;
};

DifferentiatedInputs differentiated_inputs(const OpCase& c) {
  DifferentiatedInputs d{c.inputs(), {}, {}};
  for (const auto& t : d.all)
    if (t.requires_grad()) d.differentiated.push_back(t);
  d.fn = [all = d.all, fn = c.fn](const std::vector<Tensor<double>>& xs) {
    std::vector<Tensor<double>> merged = all;
    std::size_t next = 0;
    for (auto& t : merged)
      if (t.requires_grad()) t = xs[next++];
    return fn(merged);
  };
  return d;
}

double inner(const std::vector<Tensor<double>>& a, const std::vector<Tensor<double>>& b) {
  double total = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) total += xt::sum(a[i].value() * b[i].value())();
  return total;
}

// Forward mode against reverse mode: <J u, v> = <u, J^T v> for random u and v.
TEST_P(EveryOp, JvpAgreesWithVjp) {
  const OpCase& c = GetParam();
  const DifferentiatedInputs d = differentiated_inputs(c);
  std::vector<Tensor<double>> u;
  for (std::size_t i = 0; i < d.differentiated.size(); ++i) u.push_back(constant(d.differentiated[i].shape(), 300 + i));
  const auto [out, j_u] = jvp(d.fn, d.differentiated, u);
  const Tensor<double> v = constant(out.shape(), 299);
  const auto [out_again, jt_v] = vjp(d.fn, d.differentiated, v);
  const double forward = inner(j_u, {v}), reverse = inner(u, jt_v);
  EXPECT_NEAR(forward, reverse, 1e-10 * (1.0 + std::abs(reverse)));
}

std::string case_name(const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Ops, EveryOp, ::testing::ValuesIn(op_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Modules, EveryOp, ::testing::ValuesIn(module_cases()), case_name);

// An op's output and the gradients of sum(out * v) for the inputs that require one, v fixed.
template <class T>
struct Evaluation {
  xt::xarray<T> out;
  std::vector<xt::xarray<T>> gradients;
};

template <class T>
Evaluation<T> evaluate(const CaseFunction<T>& fn, const std::vector<Tensor<double>>& inputs) {
  std::vector<Tensor<T>> x, sources;
  for (const auto& t : inputs) {
    x.emplace_back(xt::xarray<T>(xt::cast<T>(t.value())), t.requires_grad());
    if (t.requires_grad()) sources.push_back(x.back());
  }
  GradientTape tape;
  const Tensor<T> out = fn(x);
  const Tensor<T> v(xt::xarray<T>(xt::cast<T>(constant(out.shape(), 7, 0.5, 1.5).value())));
  Evaluation<T> e{out.value(), {}};
  for (const auto& g : tape.gradient(sum(mul(out, v)), sources)) e.gradients.push_back(g.value());
  return e;
}

// The case's input sets: the gradient checks' small one, and the large one if the case has it.
std::vector<std::vector<Tensor<double>>> input_sets(const OpCase& c) {
  std::vector<std::vector<Tensor<double>>> sets{c.inputs()};
  if (c.large_inputs) sets.push_back(c.large_inputs());
  return sets;
}

// Each float32 result within `relative` (a few thousand ulps unless the spec says otherwise) of
// the float64 one, relative to the largest float64 value of that result: the cases' inputs keep
// every op well conditioned.
::testing::AssertionResult agree(const xt::xarray<float>& single, const xt::xarray<double>& reference, double relative,
                                 const std::string& what) {
  if (single.shape() != reference.shape()) return ::testing::AssertionFailure() << what << ": shapes differ";
  const double scale = reference.size() == 0 ? 0.0 : xt::amax(xt::abs(reference))();
  const double tolerance = relative * std::max(scale, 1e-3);
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double d = reference.data()[i], f = single.data()[i];
    if (std::isnan(d) && std::isnan(f)) continue;
    if (d == f) continue;  // infinities
    if (!(std::abs(f - d) <= tolerance))
      return ::testing::AssertionFailure() << what << " element " << i << ": float32 " << f << ", float64 " << d
                                           << " (tolerance " << tolerance << ")";
  }
  return ::testing::AssertionSuccess();
}

class EveryOpInFloat32AndAtAnyThreadCount : public ::testing::TestWithParam<OpCase> {};

TEST_P(EveryOpInFloat32AndAtAnyThreadCount, Float32AgreesWithFloat64) {
  const OpCase& c = GetParam();
  ASSERT_TRUE(c.fn_float) << "write the case's function as a generic lambda, so that it compiles for float";
  for (const auto& inputs : input_sets(c)) {
    const Evaluation<double> reference = evaluate(c.fn, inputs);
    const Evaluation<float> single = evaluate(c.fn_float, inputs);
    EXPECT_TRUE(agree(single.out, reference.out, c.float32_tolerance, "output"));
    ASSERT_EQ(single.gradients.size(), reference.gradients.size());
    for (std::size_t i = 0; i < reference.gradients.size(); ++i)
      EXPECT_TRUE(agree(single.gradients[i], reference.gradients[i], c.float32_tolerance, "gradient " + std::to_string(i)));
  }
}


// Kernels split their work in fixed blocks, so the thread count never changes a bit.
TEST_P(EveryOpInFloat32AndAtAnyThreadCount, SameBitsAtOneAndTwoThreads) {
  const OpCase& c = GetParam();
  if (!c.deterministic) GTEST_SKIP() << "its spec says its bits depend on the thread count";
  const testing_support::ThreadCountTest thread_count_test;
  for (const auto& inputs : input_sets(c)) {
    set_num_threads(1);
    const Evaluation<double> one = evaluate(c.fn, inputs);
    set_num_threads(2);
    const Evaluation<double> two = evaluate(c.fn, inputs);
    EXPECT_TRUE(same_bits(one.out, two.out)) << "output";
    ASSERT_EQ(one.gradients.size(), two.gradients.size());
    for (std::size_t i = 0; i < one.gradients.size(); ++i)
      EXPECT_TRUE(same_bits(one.gradients[i], two.gradients[i])) << "gradient " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, EveryOpInFloat32AndAtAnyThreadCount, ::testing::ValuesIn(op_cases()), case_name);

TEST(HigherOrder, SecondAndThirdDerivativesOfACubeByHand) {
  // f(x) = sum(x^3): f' = 3x^2, f'' = 6x (diagonal), f''' = 6.
  Tensor<double> x(xt::xarray<double>{-1.5, 0.5, 2.0}, true);
  GradientTape tape;
  const Tensor<double> f = sum(mul(mul(x, x), x));
  const auto first = tape.gradient(f, {x}, {.create_graph = true});
  EXPECT_EQ(first[0].value(), (xt::xarray<double>{6.75, 0.75, 12.0}));
  ASSERT_TRUE(first[0].requires_grad());
  const auto second = tape.gradient(sum(first[0]), {x}, {.create_graph = true});
  EXPECT_EQ(second[0].value(), (xt::xarray<double>{-9.0, 3.0, 12.0}));
  const auto third = tape.gradient(sum(second[0]), {x});
  EXPECT_EQ(third[0].value(), (xt::xarray<double>{6.0, 6.0, 6.0}));
}

TEST(HigherOrder, NestedTapesOuterDifferentiatesInnerGradient) {
  // TensorFlow's pattern: the inner tape's gradient, taken with create_graph, is recorded by the
  // outer tape. z = x^2 y: dz/dx = 2xy, whose derivatives are 2y (x) and 2x (y).
  Tensor<double> x(xt::xarray<double>{3.0}, true), y(xt::xarray<double>{-2.0}, true);
  GradientTape outer;
  Tensor<double> dx;
  {
    GradientTape inner;
    const Tensor<double> z = sum(mul(mul(x, x), y));
    dx = inner.gradient(z, {x}, {.create_graph = true})[0];
  }
  EXPECT_EQ(dx.value()(0), -12.0);
  const auto second = outer.gradient(sum(dx), {x, y});
  EXPECT_EQ(second[0].value()(0), -4.0);
  EXPECT_EQ(second[1].value()(0), 6.0);
}

TEST(HigherOrder, HessianVectorProductMatchesDifferencesOfTheGradient) {
  const TensorFunction<double> f = [](const std::vector<Tensor<double>>& p) {
    return sum(mul(exp(mul(p[0], p[1])), div(p[0], add(p[1], 3.0))));
  };
  const std::vector<Tensor<double>> x{leaf({2, 3}, 401), leaf({3}, 402)};
  const std::vector<Tensor<double>> v{constant({2, 3}, 403), constant({3}, 404)};
  const auto hv = hessian_vector_product(f, x, v);
  // (grad f(x + h v) - grad f(x - h v)) / 2h
  const double h = 1e-5;
  const auto shifted_gradient = [&](double step) {
    std::vector<Tensor<double>> moved;
    for (std::size_t i = 0; i < x.size(); ++i) {
      moved.push_back(Tensor<double>(xt::xarray<double>(x[i].value() + step * v[i].value()), true));
    }
    return grad(f, moved);
  };
  const auto plus = shifted_gradient(h), minus = shifted_gradient(-h);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const xt::xarray<double> numeric = (plus[i].value() - minus[i].value()) / (2 * h);
    EXPECT_TRUE(xt::allclose(hv[i].value(), numeric, 1e-6, 1e-8)) << "input " << i;
  }
}

TEST(HigherOrder, IdenticallyZeroDerivativesComeBackAsZeros) {
  // f linear in x: H = 0. sign: J = 0, so J u = 0 whatever u.
  const TensorFunction<double> linear = [](const std::vector<Tensor<double>>& p) { return sum(mul(p[0], 3.0)); };
  const Tensor<double> x = leaf({2, 3}, 405);
  const auto hv = hessian_vector_product(linear, {x}, {constant({2, 3}, 406)});
  EXPECT_EQ(hv[0].value(), xt::xarray<double>(xt::zeros<double>({2, 3})));
  const TensorFunction<double> step = [](const std::vector<Tensor<double>>& p) { return sign(p[0]); };
  const auto [y, j_u] = jvp(step, {x}, {constant({2, 3}, 407)});
  EXPECT_EQ(y.value(), sign(x).value());
  EXPECT_EQ(j_u[0].value(), xt::xarray<double>(xt::zeros<double>({2, 3})));
}

TEST(HigherOrder, AGradientPenaltyDifferentiatesThroughTheRecordedGradient) {
  // L = sum((d/dx sum(w * x^2))^2) = sum((2 w x)^2) = 4 sum(w^2 x^2), so dL/dw = 8 w x^2.
  Tensor<double> w(xt::xarray<double>{0.5, -1.0}, true);
  const Tensor<double> x(xt::xarray<double>{2.0, 3.0}, true);
  const auto dl_dw = grad<double>(
      [&](const std::vector<Tensor<double>>& p) {
        GradientTape inner;
        const auto gx = inner.gradient(sum(mul(p[0], mul(x, x))), {x}, {.create_graph = true});
        return sum(mul(gx[0], gx[0]));
      },
      {w});
  EXPECT_EQ(dl_dw[0].value(), (xt::xarray<double>{16.0, -72.0}));
}

TEST(HigherOrder, AnArrayBackwardThrowsUnderCreateGraphNamingTheOp) {
  Tensor<double> x(xt::xarray<double>{1.0, 2.0}, true);
  GradientTape tape;
  const Tensor<double> y = custom_op<double>(
      "array_square", xt::xarray<double>(x.value() * x.value()),
      [x](const xt::xarray<double>& g, const xt::xarray<double>&) { add_gradient(x, xt::xarray<double>(2.0 * g * x.value())); },
      x);
  try {
    tape.gradient(sum(y), {x}, {.create_graph = true});
    FAIL() << "expected TapeError";
  } catch (const TapeError& e) {
    EXPECT_NE(std::string(e.what()).find("array_square"), std::string::npos) << e.what();
  }
}

TEST(HigherOrder, AHookOnTensorsReplacementIsRecorded) {
  // y = x^2 with a hook doubling dL/dy = 1: the gradient is 2 * 2x = 6 at x = 1.5, and its
  // derivative 4. (An array hook's replacement here is a TapeError: tests/test_routing.cpp.)
  Tensor<double> x(xt::xarray<double>{1.5}, true);
  GradientTape tape;
  Tensor<double> y = mul(x, x);
  y.register_hook([](const Tensor<double>& g) { return std::optional<Tensor<double>>(mul(g, 2.0)); });
  const auto g = tape.gradient(sum(y), {x}, {.create_graph = true});
  EXPECT_EQ(g[0].value()(0), 6.0);
  EXPECT_EQ(tape.gradient(sum(g[0]), {x})[0].value()(0), 4.0);
}

// Each element of `actual` equals `expected`'s (inf as inf; NaN in `expected` is not checked).
void expect_elements(const xt::xarray<double>& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (!std::isnan(expected[i])) {
      EXPECT_EQ(actual(i), expected[i]) << what << " at " << i;
    }
  }
}

constexpr double kUnchecked = std::numeric_limits<double>::quiet_NaN();

// pow(a, b) at a zero base under the exponents 0, 1, 2, 0.5 and 3, both sides differentiated
// twice. First derivatives are PyTorch 1.13's. Second ones are exact where the exact value is
// finite (PyTorch gives NaN for d2/da2 at b = 0 and for every derivative of d/db), and PyTorch's
// where it takes a convention: d(d/da)/db = 1 at b = 1, its exponent derivative of 0^(b - 1)
// being 0 there (exact: -inf). The rest are infinite and PyTorch's NaN: not checked.
TEST(HigherOrder, PowAtAZeroBaseHasTheExactFiniteSecondDerivatives) {
  const std::vector<double> exponents{0.0, 1.0, 2.0, 0.5, 3.0};
  const std::vector<double> d_da{0.0, 1.0, 0.0, kInf, 0.0}, d2_da2{0.0, 0.0, 2.0, -kInf, 0.0};
  Tensor<double> a(xt::xarray<double>(xt::zeros<double>({5})), true);
  Tensor<double> b(xt::xarray<double>{0.0, 1.0, 2.0, 0.5, 3.0}, true);
  GradientTape tape(/*persistent=*/true);
  const auto first = tape.gradient(sum(pow(a, b)), {a, b}, {.create_graph = true});
  expect_elements(first[0].value(), d_da, "d/da");
  expect_elements(first[1].value(), {0.0, 0.0, 0.0, 0.0, 0.0}, "d/db");
  const auto of_da = tape.gradient(sum(first[0]), {a, b});
  expect_elements(of_da[0].value(), d2_da2, "d2/da2");
  expect_elements(of_da[1].value(), {kUnchecked, 1.0, 0.0, kUnchecked, 0.0}, "d(d/da)/db");
  const auto of_db = tape.gradient(sum(first[1]), {a, b});
  expect_elements(of_db[0].value(), {kUnchecked, kUnchecked, 0.0, kUnchecked, 0.0}, "d(d/db)/da");
  expect_elements(of_db[1].value(), {kUnchecked, 0.0, 0.0, 0.0, 0.0}, "d2/db2");
  // A scalar exponent: the same derivatives for the base, as PyTorch's.
  for (std::size_t i = 0; i < exponents.size(); ++i) {
    const Tensor<double> x(xt::xarray<double>{0.0}, true);
    GradientTape scalar_tape(/*persistent=*/true);
    const auto dx = scalar_tape.gradient(sum(pow(x, exponents[i])), {x}, {.create_graph = true});
    EXPECT_EQ(dx[0].value()(0), d_da[i]) << "d/dx x^" << exponents[i];
    // x^0's derivative is a constant (it records nothing): its own derivative is 0.
    const double d2 = dx[0].requires_grad() ? scalar_tape.gradient(sum(dx[0]), {x})[0].value()(0) : 0.0;
    EXPECT_EQ(d2, d2_da2[i]) << "d2/dx2 x^" << exponents[i];
  }
}

}  // namespace
}  // namespace tapegrad::testing
