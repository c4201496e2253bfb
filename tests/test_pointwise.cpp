// The pointwise table's forward kernels (autograd/ops/pointwise_table.h), every row: against the
// row's standard-library reference at every length around the SIMD width and across parallel
// blocks, the same bits at one and two threads, NaN passed through, and a bad input named. Their
// derivatives are checked with every other op in test_higher_order (higher_order/pointwise_cases.cpp).
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/kernels/map.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops/pointwise.h"
#include "tests/support/pointwise_domain.h"
#include "tests/support/reference.h"

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
  const std::size_t n = 3 * kernels::detail::kMapBlock + 5;
  for (const auto& row : rows<double>()) {
    const Tensor<double> x(testing::pointwise_inputs<double>(row.domain, {n}, 3));
    set_num_threads(1);
    const xt::xarray<double> one = row.op(x, std::source_location::current()).value();
    set_num_threads(2);
    const xt::xarray<double> two = row.op(x, std::source_location::current()).value();
    set_num_threads(0);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), n * sizeof(double)), 0) << row.name;
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
