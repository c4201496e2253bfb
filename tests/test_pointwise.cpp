// The pointwise table's forward kernels (autograd/ops/pointwise_table.h), every row: against the
// row's standard-library reference at every length around the SIMD width, across parallel blocks
// and on every broadcasting path, the same bits at one and two threads, NaN passed through, and
// bad inputs named; and at the bottom, each row's spec, whose samples test_higher_order
// differentiates.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <xtensor/xbroadcast.hpp>

#include "autograd/kernels/simd/map.h"
#include "autograd/kernels/simd/pointwise_math.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "autograd/ops/all.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/support/pointwise_domain.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {

using testing::PointwiseDomain;

template <class T>
struct Row {
  std::string name;
  Tensor<T> (*op)(const Tensor<T>&, CallSite);
  T (*reference)(T);
  PointwiseDomain domain;
};

template <class T>
std::vector<Row<T>> rows() {
  std::vector<Row<T>> all;
#define TAPEGRAD_UNARY_ROW(name, forward, reference_formula, derivative, domain)                     \
  all.push_back({#name, &name<T>, [](T x) -> T { return reference_formula; }, PointwiseDomain::domain});
  TAPEGRAD_UNARY_OPS(TAPEGRAD_UNARY_ROW)
#undef TAPEGRAD_UNARY_ROW
  return all;
}

// Lengths with every SIMD tail (0 to 3 batches and a bit) and one spanning several parallel blocks.
std::vector<std::size_t> lengths() {
  std::vector<std::size_t> n;
  for (std::size_t i = 0; i <= 3 * kernels::simd::Batch<float>::size + 1; ++i) n.push_back(i);
  n.push_back(3 * kernels::detail::kMapBlock + 5);
  return n;
}


// xsimd's vector math is within a few ulp of the standard library's, not bit-equal to it.
template <class T>
void expect_forward_matches_reference(T ulps) {
  for (const auto& row : rows<T>()) {
    for (std::size_t n : lengths()) {
      const Tensor<T> x(testing::pointwise_inputs<T>(row.domain, {n}, 7 + n));
      const xt::xarray<T> y = row.op(x, std::source_location::current()).value();
      ASSERT_EQ(y.size(), n);
      for (std::size_t i = 0; i < n; ++i) {
        const T expected = row.reference(x.value()(i));
        const T tolerance = ulps * std::numeric_limits<T>::epsilon() * std::max(T(1), std::abs(expected));
        ASSERT_NEAR(y(i), expected, tolerance) << row.name << " at x = " << x.value()(i) << ", n = " << n << ", i = " << i;
      }
    }
  }
}

TEST(Pointwise, EveryRowMatchesItsReferenceAtEveryTailLength) {
  expect_forward_matches_reference<double>(4.0);
  expect_forward_matches_reference<float>(4.0f);
}

TEST(Pointwise, EveryRowGivesTheSameBitsAtOneAndTwoThreads) {
  const testing_support::ThreadCountTest thread_count_test;
  const std::size_t n = 3 * kernels::detail::kMapBlock + 5;
  for (const auto& row : rows<double>()) {
    const Tensor<double> x(testing::pointwise_inputs<double>(row.domain, {n}, 3));
    set_num_threads(1);
    const xt::xarray<double> one = row.op(x, std::source_location::current()).value();
    set_num_threads(2);
    const xt::xarray<double> two = row.op(x, std::source_location::current()).value();
    EXPECT_TRUE(same_bits(one, two)) << row.name;
  }
}

template <class T>
struct BinaryRow {
  std::string name;
  Tensor<T> (*op)(const Tensor<T>&, const Tensor<T>&, CallSite);
  T (*reference)(T, T);
  PointwiseDomain domain_a, domain_b;
};

template <class T>
std::vector<BinaryRow<T>> binary_rows() {
  std::vector<BinaryRow<T>> all;
#define TAPEGRAD_BINARY_ROW(name, forward, reference_formula, derivative_a, derivative_b, domain_a, domain_b) \
  all.push_back({#name, &name<T>, [](T a, T b) -> T { return reference_formula; }, PointwiseDomain::domain_a,  \
                 PointwiseDomain::domain_b});
  TAPEGRAD_BINARY_OPS(TAPEGRAD_BINARY_ROW)
#undef TAPEGRAD_BINARY_ROW
  return all;
}

// Pairs of shapes for every path of the broadcasting map: equal (at every tail length), a
// single-element side, a broadcast row (stride 0 along the last axis) on either side, and a
// broadcast middle axis, with rows long and short.
std::vector<std::pair<Shape, Shape>> binary_shapes() {
  std::vector<std::pair<Shape, Shape>> pairs;
  for (std::size_t n : lengths()) pairs.push_back({{n}, {n}});
  pairs.insert(pairs.end(), {{{3, 4}, {}}, {{1}, {2, 5}}, {{37, 5}, {5}}, {{5, 1}, {5, 37}}, {{5, 37}, {5, 1}},
                             {{3, 1, 17}, {4, 1}}, {{2, 1, 3}, {1, 4, 3}}, {{0, 3}, {3}}, {{300, 129}, {129}},
                             {{300, 1}, {300, 129}}});
  return pairs;
}

template <class T>
void expect_binary_forward_matches_reference(T ulps) {
  for (const auto& row : binary_rows<T>()) {
    for (const auto& [shape_a, shape_b] : binary_shapes()) {
      const Tensor<T> a(testing::pointwise_inputs<T>(row.domain_a, shape_a, 11));
      const Tensor<T> b(testing::pointwise_inputs<T>(row.domain_b, shape_b, 12));
      const xt::xarray<T> y = row.op(a, b, std::source_location::current()).value();
      const xt::xarray<T> wide_a = xt::broadcast(a.value(), y.shape()), wide_b = xt::broadcast(b.value(), y.shape());
      for (std::size_t i = 0; i < y.size(); ++i) {
        const T expected = row.reference(wide_a.data()[i], wide_b.data()[i]);
        const T tolerance = ulps * std::numeric_limits<T>::epsilon() * std::max(T(1), std::abs(expected));
        ASSERT_NEAR(y.data()[i], expected, tolerance)
            << row.name << " of shapes " << format_shape(shape_a) << " and " << format_shape(shape_b) << " at " << i;
      }
    }
  }
}

TEST(Pointwise, EveryBinaryRowMatchesItsReferenceOnEveryBroadcastPath) {
  expect_binary_forward_matches_reference<double>(4.0);
  expect_binary_forward_matches_reference<float>(4.0f);
}

TEST(Pointwise, EveryBinaryRowGivesTheSameBitsAtOneAndTwoThreads) {
  const testing_support::ThreadCountTest thread_count_test;
  for (const auto& row : binary_rows<double>()) {
    for (const auto& [shape_a, shape_b] : binary_shapes()) {
      const Tensor<double> a(testing::pointwise_inputs<double>(row.domain_a, shape_a, 5));
      const Tensor<double> b(testing::pointwise_inputs<double>(row.domain_b, shape_b, 6));
      set_num_threads(1);
      const xt::xarray<double> one = row.op(a, b, std::source_location::current()).value();
      set_num_threads(2);
      const xt::xarray<double> two = row.op(a, b, std::source_location::current()).value();
      EXPECT_TRUE(same_bits(one, two)) << row.name;
    }
  }
}

TEST(Pointwise, BinaryRowsNameTheOpAndBothShapesWhenTheyDoNotBroadcast) {
  for (const auto& row : binary_rows<double>()) {
    const Tensor<double> a = Tensor<double>::ones({2, 3}), b = Tensor<double>::ones({4});
    EXPECT_TRUE(testing::throws_with<ShapeError>([&] { row.op(a, b, std::source_location::current()); },
                                                 {row.name, "[2,3]", "[4]", "do not broadcast"}));
    EXPECT_TRUE(testing::throws_with<ValueError>([&] { row.op(a, Tensor<double>(), std::source_location::current()); },
                                                 {row.name, "b"}));
  }
}

template <class T>
struct ScalarRow {
  std::string name, recorded_name;
  Tensor<T> (*op)(const Tensor<T>&, T, CallSite);
  T (*reference)(T, T);
  PointwiseDomain domain, scalars;
};

template <class T>
std::vector<ScalarRow<T>> scalar_rows() {
  std::vector<ScalarRow<T>> all;
#define TAPEGRAD_SCALAR_ROW(name, recorded_name, forward, reference_formula, derivative, domain, scalars)         \
  all.push_back({#name, #recorded_name, &name<T>, [](T x, T s) -> T { return reference_formula; },               \
                 PointwiseDomain::domain, PointwiseDomain::scalars});
  TAPEGRAD_SCALAR_OPS(TAPEGRAD_SCALAR_ROW)
#undef TAPEGRAD_SCALAR_ROW
  return all;
}

template <class T>
void expect_scalar_forward_matches_reference(T ulps) {
  for (const auto& row : scalar_rows<T>()) {
    for (T s : testing::pointwise_scalars<T>(row.scalars)) {
      for (std::size_t n : lengths()) {
        const Tensor<T> x(testing::pointwise_inputs<T>(row.domain, {n}, 9 + n));
        const xt::xarray<T> y = row.op(x, s, std::source_location::current()).value();
        for (std::size_t i = 0; i < n; ++i) {
          const T expected = row.reference(x.value()(i), s);
          const T tolerance = ulps * std::numeric_limits<T>::epsilon() * std::max(T(1), std::abs(expected));
          ASSERT_NEAR(y(i), expected, tolerance) << row.name << " at x = " << x.value()(i) << ", s = " << s;
        }
      }
    }
  }
}

TEST(Pointwise, EveryScalarRowMatchesItsReferenceAtEveryTailLength) {
  expect_scalar_forward_matches_reference<double>(4.0);
  expect_scalar_forward_matches_reference<float>(4.0f);
}

TEST(Pointwise, ScalarRowsAreRecordedUnderTheirOwnNameAndNameTheOpForAnUndefinedInput) {
  for (const auto& row : scalar_rows<double>()) {
    GradientTape tape;
    const Tensor<double> x = Tensor<double>::ones({2}, true);
    const Tensor<double> y = row.op(x, 2.0, std::source_location::current());
    ASSERT_FALSE(tape.entries().empty());
    EXPECT_STREQ(tape.entries().back()->op, row.recorded_name.c_str());
    EXPECT_TRUE(testing::throws_with<ValueError>([&] { row.op(Tensor<double>(), 2.0, std::source_location::current()); },
                                                 {row.name, "a"}));
  }
}

TEST(Pointwise, NaNPassesThroughExceptSignWhichGivesZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& row : rows<double>()) {
    // In a batch and in the tail.
    const std::size_t n = kernels::simd::Batch<double>::size + 1;
    const Tensor<double> x(xt::xarray<double>(xt::xarray<double>::shape_type{n}, nan));
    const xt::xarray<double> y = row.op(x, std::source_location::current()).value();
    for (std::size_t i = 0; i < n; ++i) {
      if (row.name == "sign") EXPECT_EQ(y(i), 0.0) << i;
      else EXPECT_TRUE(std::isnan(y(i))) << row.name << " at " << i;
    }
  }
}

// pow is std::pow's answer to the bit, in batches and in the tail, on exact powers (xsimd's pow gave
// 3^2 = 8.9999999999999982 on AVX2) and on powers of arbitrary bases (up to 10 ulp off).
template <class T>
void expect_pow_is_std_pow() {
  const std::size_t n = 4 * kernels::simd::Batch<T>::size + 3;
  xt::xarray<T> a(typename xt::xarray<T>::shape_type{n}), b(a.shape());
  for (std::size_t i = 0; i < n; ++i) {
    a(i) = i % 2 ? T(i % 7 + 1) : T(0.1) + T(0.37) * T(i);
    b(i) = i % 3 ? T(i % 4) : T(-2.5) + T(0.29) * T(i);
  }
  const xt::xarray<T> y = pow(Tensor<T>(a), Tensor<T>(b)).value();
  const xt::xarray<T> squared = pow(Tensor<T>(a), T(2)).value();
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(y(i), std::pow(a(i), b(i))) << a(i) << "^" << b(i);
    EXPECT_EQ(squared(i), a(i) * a(i)) << a(i) << "^2";
  }
}

TEST(Pointwise, PowIsStdPowToTheBit) {
  expect_pow_is_std_pow<double>();
  expect_pow_is_std_pow<float>();
}

// IEEE's pow (std::pow, PyTorch) where xsimd's departs from it, in batches and in the tail:
// x^0 = 1 for every x, 0 to a negative power is infinite (signed as the base for odd powers), and
// a negative base to a power beyond the odd integers is positive.
template <class T>
void expect_ieee_pow_edges() {
  const std::size_t n = kernels::simd::Batch<T>::size + 1;
  const T huge = T(1) / std::numeric_limits<T>::epsilon() * T(4);  // an even integer
  const auto filled = [](T v) { return Tensor<T>(xt::xarray<T>(typename xt::xarray<T>::shape_type{n}, v)); };
  const Tensor<T> base = filled(0), zero = filled(0), negative = filled(-501), even = filled(huge), three = filled(3);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(pow(base, zero).value()(i), T(1)) << i;
    EXPECT_EQ(pow(negative, zero).value()(i), T(1)) << i;
    EXPECT_EQ(pow(base, T(0)).value()(i), T(1)) << i;
    EXPECT_EQ(pow(negative, even).value()(i), std::numeric_limits<T>::infinity()) << i;
    EXPECT_FLOAT_EQ(pow(negative, three).value()(i), std::pow(T(-501), T(3))) << i;  // still odd
    EXPECT_EQ(pow(base, filled(-2)).value()(i), std::numeric_limits<T>::infinity()) << i;
    EXPECT_EQ(pow(filled(-0.0), filled(-3)).value()(i), -std::numeric_limits<T>::infinity()) << i;
    EXPECT_EQ(pow(filled(-0.0), filled(-2)).value()(i), std::numeric_limits<T>::infinity()) << i;
    EXPECT_EQ(pow(base, filled(2.5)).value()(i), T(0)) << i;
  }
}

TEST(Pointwise, PowGivesIeeeAnswersAtZeroExponentsAndHugeEvenOnes) {
  expect_ieee_pow_edges<double>();
  expect_ieee_pow_edges<float>();
}

// PyTorch's pow derivatives: d/da is 0 where b = 0, d/db is 0 where a = 0 and b >= 0 (the
// plain formulas give 0 * inf = NaN at a = 0); elsewhere b a^(b-1) and a^b log a.
TEST(Pointwise, PowDerivativesAreZeroWherePyTorchsAre) {
  Tensor<double> a(xt::xarray<double>{0.0, 0.0, 0.0, 2.0}, true), b(xt::xarray<double>{0.0, 2.0, 0.5, 3.0}, true);
  GradientTape tape;
  const auto grads = tape.gradient(sum(pow(a, b)), {a, b});
  EXPECT_EQ(grads[0].value(), (xt::xarray<double>{0.0, 0.0, INFINITY, 12.0}));
  EXPECT_EQ(grads[1].value(), (xt::xarray<double>{0.0, 0.0, 0.0, 8.0 * std::log(2.0)}));
  GradientTape again;
  const Tensor<double> x(xt::xarray<double>{0.0, 1.5}, true);
  EXPECT_EQ(again.gradient(sum(pow(x, 0.0)), {x})[0].value(), (xt::xarray<double>{0.0, 0.0}));
}

TEST(Pointwise, MapKernelWritesInPlaceAndRunsScalarOnlyFunctions) {
  std::vector<double> a = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b = {9, 8, 7, 6, 5, 4, 3, 2, 1};
  kernels::map(a.size(), a.data(), b.data(), a.data(), [](auto p, auto q) { return p * q; });
  EXPECT_EQ(a, (std::vector<double>{9, 16, 21, 24, 25, 24, 21, 16, 9}));
  // A function of doubles only (a branch xsimd cannot take) goes element by element.
  kernels::map(b.size(), b.data(), b.data(), [](double v) { return v > 4.5 ? v : 0.0; });
  EXPECT_EQ(b, (std::vector<double>{9, 8, 7, 6, 5, 0, 0, 0, 0}));
}

TEST(Pointwise, AnUndefinedInputNamesTheOp) {
  for (const auto& row : rows<double>()) {
    EXPECT_TRUE(testing::throws_with<ValueError>([&] { row.op(Tensor<double>(), std::source_location::current()); },
                                                 {row.name, "a"}))
        << row.name;
  }
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using V = std::vector<Tensor<double>>;

// Leaves of `shape` drawn from the domain, one seed apart.
CaseInputs domain_leaves(std::vector<std::pair<PointwiseDomain, Shape>> operands, std::uint64_t seed) {
  return [operands = std::move(operands), seed] {
    V leaves;
    for (std::size_t i = 0; i < operands.size(); ++i)
      leaves.emplace_back(pointwise_inputs<double>(operands[i].first, operands[i].second, seed + i), true);
    return leaves;
  };
}

// What a row's spec holds beyond the samples the table gives every row.
struct RowSpec {
  std::vector<OpCase> samples;
  std::vector<OpError> errors;
  std::vector<PyTorchName> pytorch;
};

// Linear or piecewise constant ops are composed with a product so the second derivative is not
// zero; the rounded quotients stay inside (2, 2.4) and (-2.4, -2), away from their jumps, and
// maximum / minimum away from ties (the unit tests above check those points exactly).
// Each row's samples beyond the generated ones, its error inputs and its PyTorch names.
std::map<std::string, RowSpec> row_specs() {
  std::map<std::string, RowSpec> rows;
  {
    RowSpec& r = rows["neg"];
    r.errors = {
        error_input<ValueError>("neg_undefined", "`neg`", "undefined a",
                      [] { return -bad_inputs::undefined(); },
                      {"neg", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"neg", unary([](const T& x) { return neg(x); })},
    };
  }
  {
    RowSpec& r = rows["exp"];
    r.errors = {
        error_input<ValueError>("exp_undefined", "`exp`", "undefined a",
                      [] { return exp(bad_inputs::undefined()); },
                      {"exp", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"exp", unary([](const T& x) { return exp(x); })},
    };
  }
  {
    RowSpec& r = rows["expm1"];
    r.errors = {
        error_input<ValueError>("expm1_undefined", "`expm1`", "undefined a",
                      [] { return expm1(bad_inputs::undefined()); },
                      {"expm1", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"expm1", unary([](const T& x) { return expm1(x); })},
    };
  }
  {
    RowSpec& r = rows["log"];
    r.errors = {
        error_input<ValueError>("log_undefined", "`log`", "undefined a",
                      [] { return log(bad_inputs::undefined()); },
                      {"log", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"log", unary([](const T& x) { return log(x); })},
    };
  }
  {
    RowSpec& r = rows["log1p"];
    r.errors = {
        error_input<ValueError>("log1p_undefined", "`log1p`", "undefined a",
                      [] { return log1p(bad_inputs::undefined()); },
                      {"log1p", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"log1p", unary([](const T& x) { return log1p(x); })},
    };
  }
  {
    RowSpec& r = rows["sqrt"];
    r.errors = {
        error_input<ValueError>("sqrt_undefined", "`sqrt`", "undefined a",
                      [] { return sqrt(bad_inputs::undefined()); },
                      {"sqrt", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"sqrt", unary([](const T& x) { return sqrt(x); })},
    };
  }
  {
    RowSpec& r = rows["rsqrt"];
    r.errors = {
        error_input<ValueError>("rsqrt_undefined", "`rsqrt`", "undefined a",
                      [] { return rsqrt(bad_inputs::undefined()); },
                      {"rsqrt", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"rsqrt", unary([](const T& x) { return rsqrt(x); })},
    };
  }
  {
    RowSpec& r = rows["reciprocal"];
    r.errors = {
        error_input<ValueError>("reciprocal_undefined", "`reciprocal`", "undefined a",
                      [] { return reciprocal(bad_inputs::undefined()); },
                      {"reciprocal", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"reciprocal", unary([](const T& x) { return reciprocal(x); })},
    };
  }
  {
    RowSpec& r = rows["sin"];
    r.errors = {
        error_input<ValueError>("sin_undefined", "`sin`", "undefined a",
                      [] { return sin(bad_inputs::undefined()); },
                      {"sin", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"sin", unary([](const T& x) { return sin(x); })},
    };
  }
  {
    RowSpec& r = rows["cos"];
    r.errors = {
        error_input<ValueError>("cos_undefined", "`cos`", "undefined a",
                      [] { return cos(bad_inputs::undefined()); },
                      {"cos", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"cos", unary([](const T& x) { return cos(x); })},
    };
  }
  {
    RowSpec& r = rows["abs"];
    r.samples = {
        {"abs_of_product", [](const auto& x) { return abs(mul(x[0], x[1])); }, [] { return V{leaf({4}, 29), leaf({4}, 30)}; }},
    };
    r.errors = {
        error_input<ValueError>("abs_undefined", "`abs`", "undefined a",
                      [] { return abs(bad_inputs::undefined()); },
                      {"abs", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"abs", unary([](const T& x) { return abs(x); })},
    };
  }
  {
    RowSpec& r = rows["sign"];
    r.errors = {
        error_input<ValueError>("sign_undefined", "`sign`", "undefined a",
                      [] { return sign(bad_inputs::undefined()); },
                      {"sign", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"sgn", unary([](const T& x) { return sign(x); })},
        {"sign", unary([](const T& x) { return sign(x); })},
    };
  }
  {
    RowSpec& r = rows["add"];
    r.errors = {
        error_input<ShapeError>("add_shapes_do_not_broadcast", "`add (a + b)`", "[2,3] + [4]",
                      [] { return bad_inputs::zeros({2, 3}) + bad_inputs::zeros({4}); },
                      {"add", "[2,3]", "[4]"}),
        error_input<ValueError>("add_undefined_b", "`add`", "undefined b",
                      [] { return bad_inputs::zeros({2}) + bad_inputs::undefined(); },
                      {"add", "'b'", "undefined"}),
        error_input<ValueError>("add_scalar_undefined", "`add(a, scalar)`", "undefined a",
                      [] { return bad_inputs::undefined() + 1.0; },
                      {"add", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"add", binary([](const T& a, const T& b) { return add(a, b); }, [](const T& a, double s) { return add(a, s); },
                         [](double s, const T& b) { return add(b, s); })},
        {"__radd__", binary([](const T& a, const T& b) { return add(b, a); }, [](const T& a, double s) { return add(a, s); })},
    };
  }
  {
    RowSpec& r = rows["sub"];
    r.errors = {
        error_input<ShapeError>("sub_shapes_do_not_broadcast", "`sub (a - b)`", "[2,3] - [2,1,2]",
                      [] { return bad_inputs::zeros({2, 3}) - bad_inputs::zeros({2, 1, 2}); },
                      {"sub", "[2,3]", "[2,1,2]"}),
    };
    r.pytorch = {
        {"sub", binary([](const T& a, const T& b) { return sub(a, b); }, [](const T& a, double s) { return a - s; },
                         [](double s, const T& b) { return rsub(b, s); })},
    };
  }
  {
    RowSpec& r = rows["mul"];
    r.samples = {
        {"mul_self", [](const auto& x) { return mul(x[0], x[0]); }, [] { return V{leaf({5}, 9)}; }},
        {"mul_constant", [](const auto& x) { return mul(x[0], x[1]); }, [] { return V{leaf({2, 3}, 10), constant({3}, 11)}; }},
    };
    r.errors = {
        error_input<ShapeError>("mul_zero_size_axis_against_two", "`mul (a * b)`", "zero-size axis against size 2: [0,3] * [2,3]",
                      [] { return bad_inputs::zeros({0, 3}) * bad_inputs::zeros({2, 3}); },
                      {"mul", "[0,3]", "[2,3]"}),
        error_input<ValueError>("mul_undefined_a", "`mul`", "undefined a",
                      [] { return bad_inputs::undefined() * bad_inputs::zeros({2}); },
                      {"mul", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"mul", binary([](const T& a, const T& b) { return mul(a, b); }, [](const T& a, double s) { return mul(a, s); },
                         [](double s, const T& b) { return mul(b, s); })},
        {"__rmul__", binary([](const T& a, const T& b) { return mul(b, a); }, [](const T& a, double s) { return mul(a, s); })},
    };
  }
  {
    RowSpec& r = rows["div"];
    r.samples = {
        {"div_none", [](const auto& x) { return div(x[0], x[1], RoundingMode::none); },
           [] { return V{leaf({2, 3}, 719), leaf({3}, 720, 0.5, 1.5)}; }},
    };
    r.errors = {
        error_input<ShapeError>("div_shapes_do_not_broadcast", "`div (a / b)`", "[3] / [2]",
                      [] { return bad_inputs::zeros({3}) / bad_inputs::zeros({2}); },
                      {"div", "[3]", "[2]"}),
    };
    r.pytorch = {
        {"div.no_rounding_mode", divide},
        {"true_divide", divide},
    };
  }
  {
    RowSpec& r = rows["pow"];
    r.errors = {
        error_input<ShapeError>("pow_shapes_do_not_broadcast", "`pow(a, b)`", "[3] and [2]",
                      [] { return pow(bad_inputs::zeros({3}), bad_inputs::zeros({2})); },
                      {"pow", "[3]", "[2]"}),
        error_input<ValueError>("pow_scalar_undefined", "`pow(a, scalar)`", "undefined a",
                      [] { return pow(bad_inputs::undefined(), 2.0); },
                      {"pow", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"pow", binary([](const T& a, const T& b) { return pow(a, b); }, [](const T& a, double s) { return pow(a, s); },
                         [](double s, const T& b) { return pow(s, b); })},
    };
  }
  {
    RowSpec& r = rows["maximum"];
    r.samples = {
        {"maximum_broadcast_times_input", [](const auto& x) { return mul(maximum(x[0], x[1]), x[0]); },
           [] { return V{leaf({2, 1}, 721), leaf({3}, 722)}; }},
    };
    r.errors = {
        error_input<ShapeError>("maximum_shapes_do_not_broadcast", "`maximum`", "[2,3] and [4]",
                      [] { return maximum(bad_inputs::zeros({2, 3}), bad_inputs::zeros({4})); },
                      {"maximum", "[2,3]", "[4]"}),
    };
    r.pytorch = {
        {"maximum", binary_tensors([](const T& a, const T& b) { return maximum(a, b); })},
        {"max.binary", binary_tensors([](const T& a, const T& b) { return maximum(a, b); })},
    };
  }
  {
    RowSpec& r = rows["minimum"];
    r.samples = {
        {"minimum_broadcast_times_input", [](const auto& x) { return mul(minimum(x[0], x[1]), x[1]); },
           [] { return V{leaf({2, 3}, 723), leaf({2, 1, 3}, 724)}; }},
    };
    r.errors = {
        error_input<ValueError>("minimum_undefined_a", "`minimum`", "undefined a",
                      [] { return minimum(bad_inputs::undefined(), bad_inputs::zeros({2})); },
                      {"minimum", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"minimum", binary_tensors([](const T& a, const T& b) { return minimum(a, b); })},
        {"min.binary", binary_tensors([](const T& a, const T& b) { return minimum(a, b); })},
    };
  }
  {
    RowSpec& r = rows["div_trunc"];
    r.samples = {
        {"div_trunc_times_input", [](const auto& x) { return mul(div(x[0], x[1], RoundingMode::trunc), x[0]); },
           [] { return V{leaf({2, 3}, 715, 1.1, 1.2), leaf({3}, 716, 0.5, 0.55)}; }},
    };
    r.errors = {
        error_input<ValueError>("div_trunc_undefined_b", "`div_trunc`, `div(a, b, RoundingMode::trunc)`", "undefined b",
                      [] { return div_trunc(bad_inputs::zeros({2}), bad_inputs::undefined()); },
                      {"div_trunc", "'b'", "undefined"}),
    };
    r.pytorch = {
        {"div.trunc_rounding", divide},
    };
  }
  {
    RowSpec& r = rows["div_floor"];
    r.samples = {
        {"div_floor_times_input", [](const auto& x) { return mul(div(x[0], x[1], RoundingMode::floor), x[1]); },
           [] { return V{leaf({2, 3}, 717, -1.2, -1.1), leaf({2, 1}, 718, 0.5, 0.55)}; }},
    };
    r.errors = {
        error_input<ShapeError>("div_floor_shapes_do_not_broadcast", "`div_floor`, `div(a, b, RoundingMode::floor)`", "[3] and [2]",
                      [] { return div(bad_inputs::zeros({3}), bad_inputs::zeros({2}), RoundingMode::floor); },
                      {"div_floor", "[3]", "[2]"}),
    };
    r.pytorch = {
        {"div.floor_rounding", divide},
    };
  }
  {
    RowSpec& r = rows["rsub"];
    r.errors = {
        error_input<ValueError>("rsub_undefined", "`rsub (scalar - a)`", "undefined a",
                      [] { return 1.0 - bad_inputs::undefined(); },
                      {"rsub", "'a'", "undefined"}),
    };
    r.pytorch = {
        // rsub(x, other) and x.__rop__(other) compute other op x.
        {"rsub", binary([](const T& a, const T& b) { return sub(b, a); }, [](const T& a, double s) { return rsub(a, s); },
                          [](double s, const T& b) { return b - s; })},
        {"__rsub__", binary([](const T& a, const T& b) { return sub(b, a); }, [](const T& a, double s) { return rsub(a, s); })},
    };
  }
  {
    RowSpec& r = rows["rdiv"];
    r.errors = {
        error_input<ValueError>("rdiv_undefined", "`rdiv (scalar / a)`", "undefined a",
                      [] { return 1.0 / bad_inputs::undefined(); },
                      {"rdiv", "'a'", "undefined"}),
    };
    r.pytorch = {
        {"__rdiv__", binary([](const T& a, const T& b) { return div(b, a); }, [](const T& a, double s) { return rdiv(a, s); })},
    };
  }
  {
    RowSpec& r = rows["rpow"];
    r.samples = {
        {"pow_scalar_base", [](const auto& x) { return pow(scalar_of(x, 2.0), x[0]); }, [] { return V{leaf({2, 3}, 725)}; }},
        {"pow_fractional_base", [](const auto& x) { return mul(pow(scalar_of(x, 0.5), x[0]), x[0]); },
           [] { return V{leaf({4}, 726)}; }},
    };
    r.errors = {
        error_input<ValueError>("pow_scalar_base_undefined", "`pow(s, a)`", "undefined a",
                      [] { return pow(2.0, bad_inputs::undefined()); },
                      {"rpow", "'a'", "undefined"}),
    };
    r.pytorch = {
        // Tensor.__rpow__ copies a tensor other (torch.tensor(other) ** self): no gradient for it.
        {"__rpow__", binary([](const T& a, const T& b) { return pow(b.detach(), a); },
                              [](const T& a, double s) { return pow(s, a); })},
    };
  }
  return rows;
}

// Every row of the pointwise table, from the row's domain: a unary op at a 0-d, a 1-d and a 3-d
// shape; a binary op at equal and broadcast shapes; an op with a scalar at four scalars. The 3-d,
// broadcast_both and first scalar forms also come at a size of several parallel blocks. Then
// each row's own samples, error inputs and PyTorch names (row_specs).
TAPEGRAD_OP_SPECS(pointwise) {
  std::vector<OpSpec> specs;
  const auto spec = [&specs](const std::string& name) -> OpSpec& {
    for (auto& s : specs)
      if (s.name == name) return s;
    return specs.emplace_back(name, "pointwise");
  };
  const auto add_row = [&spec](const std::string& name, auto op, PointwiseDomain domain) {
    auto& samples = spec(name).samples;
    samples.emplace_back(name + "_scalar", op, domain_leaves({{domain, {}}}, 100));
    samples.emplace_back(name + "_vector", op, domain_leaves({{domain, {7}}}, 101));
    samples.push_back(OpCase(name + "_3d", op, domain_leaves({{domain, {2, 3, 4}}}, 102))
                          .at_scale(domain_leaves({{domain, {5, 97, 131}}}, 103)));
  };
#define TAPEGRAD_UNARY_SPEC(name, forward, reference, derivative, domain) \
  add_row(#name, [](const auto& x) { return name(x[0]); }, PointwiseDomain::domain);
  TAPEGRAD_UNARY_OPS(TAPEGRAD_UNARY_SPEC)
#undef TAPEGRAD_UNARY_SPEC

  const auto add_binary_row = [&spec](const std::string& name, auto op, PointwiseDomain domain_a,
                                      PointwiseDomain domain_b) {
    // Equal shapes, each side broadcast, both sides broadcast, and a 0-d operand.
    const std::vector<std::tuple<std::string, Shape, Shape>> shapes = {{"same", {2, 3}, {2, 3}},
                                                                       {"broadcast_b", {2, 3}, {3}},
                                                                       {"broadcast_a", {2, 1}, {2, 4}},
                                                                       {"broadcast_both", {2, 1, 3}, {4, 1}},
                                                                       {"scalar_b", {3, 2}, {}}};
    std::uint64_t seed = 200;
    for (const auto& [label, shape_a, shape_b] : shapes) {
      OpCase c(name + "_" + label, op, domain_leaves({{domain_a, shape_a}, {domain_b, shape_b}}, seed));
      if (label == "broadcast_both") c = std::move(c).at_scale(domain_leaves({{domain_a, {3, 1, 301}}, {domain_b, {89, 1}}}, seed));
      spec(name).samples.push_back(std::move(c));
      seed += 2;
    }
  };
#define TAPEGRAD_BINARY_SPEC(name, forward, reference, derivative_a, derivative_b, domain_a, domain_b) \
  add_binary_row(#name, [](const auto& x) { return name(x[0], x[1]); }, PointwiseDomain::domain_a, PointwiseDomain::domain_b);
  TAPEGRAD_BINARY_OPS(TAPEGRAD_BINARY_SPEC)
#undef TAPEGRAD_BINARY_SPEC

  const auto add_scalar_row = [&spec](const std::string& name, auto op, PointwiseDomain domain, PointwiseDomain scalars) {
    // Scalars of both signs (unless the row's scalars are positive), an integer and a fraction.
    std::uint64_t seed = 300;
    for (double s : pointwise_scalars<double>(scalars)) {
      const auto with_s = [op, s](const auto& x) { return op(x[0], s); };
      OpCase c(name + "_scalar_" + std::to_string(seed - 299), with_s, domain_leaves({{domain, {2, 3}}}, seed));
      if (seed == 300) c = std::move(c).at_scale(domain_leaves({{domain, {7, 6007}}}, seed));
      spec(name).samples.push_back(std::move(c));
      ++seed;
    }
  };
#define TAPEGRAD_SCALAR_SPEC(name, recorded_name, forward, reference, derivative, domain, scalars) \
  add_scalar_row(#name, [](const auto& a, double s) { return name(a, s); }, PointwiseDomain::domain, PointwiseDomain::scalars);
  TAPEGRAD_SCALAR_OPS(TAPEGRAD_SCALAR_SPEC)
#undef TAPEGRAD_SCALAR_SPEC

  // pow at the edge of its domain: a zero base (and a nonzero one) under the exponents 0, 1, 2
  // and 3, held constant (the exponent's derivative has no finite difference at a zero base).
  // Exact there: d/da = 0, 1, 0, 0 and d2/da2 = 0, 0, 2, 0.
  spec("pow").samples.emplace_back(
      "pow_zero_base_integer_exponents", [](const auto& x) { return pow(x[0], x[1]); }, [] {
        return V{Tensor<double>(xt::xarray<double>{{0.0, 0.0, 0.0, 0.0}, {0.5, -0.7, 1.3, -1.1}}, true),
                 Tensor<double>(xt::xarray<double>{0.0, 1.0, 2.0, 3.0})};
      });
  for (auto& [name, row] : row_specs()) {
    OpSpec& s = spec(name);
    for (auto& c : row.samples) s.samples.push_back(std::move(c));
    s.errors = std::move(row.errors);
    s.pytorch = std::move(row.pytorch);
  }
  return specs;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
