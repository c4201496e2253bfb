#pragma once
// Values and exact comparisons the op tests share. One definition each: the op test files are
// compiled in batches (the unity build, CMakeLists.txt), where two files' private helpers of one
// name would collide.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/core/tensor.h"
#include "autograd/ops/loss.h"

namespace tapegrad {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
// PyTorch's default ignore_index of the classification losses.
inline constexpr Index kIgnore = -100;
// Every reduction of the losses.
inline const std::vector<Reduction> kEveryReduction = {Reduction::None, Reduction::Sum, Reduction::Mean};

// 0, 1, 2, ... laid out in `shape`: every element tells where it came from.
inline Tensor<double> iota(const Shape& shape, bool requires_grad = false) {
  xt::xarray<double> v = xt::xarray<double>::from_shape(shape);
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor<double>(std::move(v), requires_grad);
}

// A [n,1] column ({{a}, {b}} is ambiguous to xtensor).
inline xt::xarray<double> column(std::initializer_list<double> values) {
  xt::xarray<double> c = xt::xarray<double>::from_shape({values.size(), 1});
  std::copy(values.begin(), values.end(), c.begin());
  return c;
}

// The same shape and bits, element for element: -0. differs from 0., a NaN equals only the same
// NaN. (memcmp must not be given the null data of an empty array, even for 0 bytes: UBSan stops on it.)
inline bool same_bits(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// Equal element by element, NaN matching any NaN; `close` allows a few ulps for transcendental values.
inline void expect_same(const xt::xarray<double>& actual, const xt::xarray<double>& expected, double close = 0.0) {
  ASSERT_EQ(actual.shape(), expected.shape());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = actual.data()[i], e = expected.data()[i];
    if (std::isnan(e)) EXPECT_TRUE(std::isnan(a)) << "element " << i << ": " << a;
    else if (std::isinf(e) || close == 0.0) EXPECT_EQ(a, e) << "element " << i;
    else EXPECT_NEAR(a, e, close) << "element " << i;
  }
}

}  // namespace tapegrad
