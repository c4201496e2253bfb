// The pointwise table's forward kernels (autograd/ops/pointwise_table.h), every row: against the
// row's standard-library reference at every length around the SIMD width, across parallel blocks
// and on every broadcasting path, the same bits at one and two threads, NaN passed through, and
// bad inputs named. Their
// derivatives are checked with every other op in test_higher_order (higher_order/pointwise_cases.cpp).
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xtensor/xbroadcast.hpp>

#include "autograd/kernels/simd/map.h"
#include "autograd/kernels/simd/pointwise_math.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "autograd/ops/pointwise.h"
#include "autograd/core/tape.h"
#include "tests/support/pointwise_domain.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

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

// The same bits, element for element. (memcmp must not be given the null data of an empty array,
// even for 0 bytes: UBSan stops on it.)
bool same_bits(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
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
  const testing_support::DefaultThreadsAtExit default_threads_at_exit;
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
  const testing_support::DefaultThreadsAtExit default_threads_at_exit;
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
}  // namespace tapegrad
