// Anomaly mode (autograd/core/anomaly.h): the first op whose output holds a NaN or an infinity it
// created, forward or backward, throws AnomalyError naming the op and the file:line it was called
// from; off by default, per thread, restored by DetectAnomalyGuard.
#include <cmath>
#include <limits>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "autograd/core/anomaly.h"
#include "autograd/core/custom_op.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

// "test_anomaly.cpp:<line>", the call site a report must name.
std::string here(int line) { return "test_anomaly.cpp:" + std::to_string(line); }

template <class T>
Tensor<T> tensor(std::initializer_list<T> values, const Shape& shape, bool requires_grad = false) {
  xt::xarray<T> v = xt::xarray<T>::from_shape(shape);
  std::copy(values.begin(), values.end(), v.begin());
  return Tensor<T>(std::move(v), requires_grad);
}

template <class T>
class Anomaly : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Anomaly, ElementTypes);

TYPED_TEST(Anomaly, OffByDefaultAndNanPropagates) {
  using T = TypeParam;
  EXPECT_FALSE(is_anomaly_enabled());
  const auto x = tensor<T>({0, 1, -1, 4}, {4}, true);
  GradientTape tape;
  const auto y = sum(sqrt(x) + log(x));  // sqrt(-1) = nan, log(0) = -inf: no error when off
  EXPECT_TRUE(std::isnan(y.item()));
  EXPECT_NO_THROW(tape.backward(y));
  EXPECT_TRUE(std::isnan(x.grad()(2)));
}

TYPED_TEST(Anomaly, LogOfZeroNamesOpFileLineAndIndex) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const auto x = tensor<T>({1, 2, 3, 4, 0, 6}, {2, 3});
  // The call stands outside the macro: inside a macro call spanning lines, clang 14 gives the
  // call's std::source_location the macro's last line where gcc gives the call's own line.
  const auto call = [&] { log(x); };
  const int line = __LINE__ - 1;
  EXPECT_TRUE(throws_with<AnomalyError>(call, {"anomaly mode: log (called at", here(line),
                                               "-inf in its output of shape [2,3] at index [1,1]",
                                               "(1 of 6 elements not finite)"}));
}

TYPED_TEST(Anomaly, SqrtOfNegativeIsNan) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const auto x = tensor<T>({4, -1}, {2});
  EXPECT_TRUE(throws_with<AnomalyError>([&] { sqrt(x); }, {"sqrt", here(__LINE__), "nan in its output", "index [1]"}));
}

TYPED_TEST(Anomaly, ZeroOverZeroThroughTheOperatorNamesTheCallersLine) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const auto a = tensor<T>({0, 1}, {2}), b = tensor<T>({0, 2}, {2});
  EXPECT_TRUE(throws_with<AnomalyError>([&] { return a / b; }, {"div (called at", here(__LINE__), "nan in its output"}));
  EXPECT_TRUE(throws_with<AnomalyError>([&] { return b / T(0); }, {"mul_scalar (called at", here(__LINE__), "nan in"}));
  const auto reciprocal = [&] { return T(1) / a; };  // outside the macro, as above
  const int reciprocal_line = __LINE__ - 1;
  EXPECT_TRUE(throws_with<AnomalyError>(reciprocal, {"rdiv_scalar (called at", here(reciprocal_line),
                                                     "inf in its output of shape [2] at index [0]"}));
  EXPECT_TRUE(throws_with<AnomalyError>([&] { return -(a / a); }, {"div (called at", here(__LINE__)}));
}

TYPED_TEST(Anomaly, OverflowIsAnInfinityTheOpCreated) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const auto x = tensor<T>({1, 1000}, {2});
  EXPECT_TRUE(throws_with<AnomalyError>([&] { exp(x); }, {"exp", here(__LINE__), "inf in its output", "index [1]"}));
}

TYPED_TEST(Anomaly, NanFromALeafIsReportedAtTheFirstOpThatReadsIt) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const auto x = tensor<T>({1, std::numeric_limits<T>::quiet_NaN()}, {2});
  EXPECT_TRUE(throws_with<AnomalyError>([&] { return x + T(1); }, {"add_scalar", here(__LINE__), "nan in its output"}));
}

// Masked attention's -inf is there by design: masked_fill's fill value, carried on by add,
// reshape and max, and log_softmax of a fully masked row (-inf by definition) are not reported,
// forward or backward.
TYPED_TEST(Anomaly, IntendedInfinitiesOfMaskingPass) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const T inf = std::numeric_limits<T>::infinity();
  const auto scores = tensor<T>({1, 2, 3, 4, 5, 6}, {2, 3}, true);
  Mask hide = {{false, true, false}, {true, true, true}};  // second row fully masked
  GradientTape tape;
  const auto masked = masked_fill(scores, hide, -inf);
  const auto shifted = reshape(masked + T(1), {2, 3});
  EXPECT_EQ(max(shifted, {1}).value()(1), -inf);
  const auto log_p = log_softmax(shifted, 1);
  EXPECT_EQ(log_p.value()(1, 0), -inf);
  const auto p = softmax(shifted, 1);
  EXPECT_NO_THROW(tape.backward(sum(p * tensor<T>({1, 2, 3, 4, 5, 6}, {2, 3}))));
  EXPECT_EQ(scores.grad()(1, 0), T(0));
}

TYPED_TEST(Anomaly, AnInfinityFromAMaskStillFailsWhereItMakesANan) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const auto masked = masked_fill(tensor<T>({1, 2}, {2}), Mask{true, false}, -std::numeric_limits<T>::infinity());
  EXPECT_TRUE(throws_with<AnomalyError>([&] { return masked - masked; }, {"sub", here(__LINE__), "nan in its output", "index [0]"}));
}

TYPED_TEST(Anomaly, BackwardOfSqrtAtZeroNamesSqrtAndWhereItWasCalled) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  auto x = tensor<T>({4, 0, 1}, {3}, true);
  x.set_name("x");
  GradientTape tape;
  const int line = __LINE__; const auto y = sqrt(x);  // sqrt(0) = 0 is fine; its gradient is not
  const auto loss = sum(y * T(2));
  EXPECT_TRUE(throws_with<AnomalyError>([&] { tape.backward(loss); },
                                        {"the backward of sqrt (called at", here(line),
                                         "inf in the gradient of the leaf 'x' of shape [3] at index [1]"}));
}

TYPED_TEST(Anomaly, BackwardNamesTheIntermediateInputThatGotTheBadGradient) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const auto x = tensor<T>({0, 1}, {2}, true);
  GradientTape tape;
  const auto z = x * T(1);
  const int line = __LINE__; const auto y = sqrt(z);
  EXPECT_TRUE(throws_with<AnomalyError>([&] { tape.backward(sum(y)); },
                                        {"backward of sqrt", here(line), "the gradient of the output of mul_scalar"}));
}

// A custom op whose backward returns NaN: the report names the custom op and the line of the
// custom_op call.
template <class T>
Tensor<T> bad_square(const Tensor<T>& x, int& line) {
  line = __LINE__; return custom_op("bad_square", xt::xarray<T>(x.value() * x.value()),
                                    [x](const xt::xarray<T>& g, const xt::xarray<T>&) {
                                      add_gradient(x, xt::xarray<T>(g * std::numeric_limits<T>::quiet_NaN()));
                                    },
                                    x);
}

TYPED_TEST(Anomaly, CustomOpWithABadBackward) {
  using T = TypeParam;
  auto x = tensor<T>({1, 2}, {2}, true);
  int line = 0;
  {
    GradientTape tape;
    const auto y = sum(bad_square(x, line));
    EXPECT_NO_THROW(tape.backward(y));  // off: the NaN lands in the gradient silently
    EXPECT_TRUE(std::isnan(x.grad()(0)));
  }
  x.zero_grad();
  const DetectAnomalyGuard anomaly;
  GradientTape tape;
  const auto y = sum(bad_square(x, line));
  EXPECT_TRUE(throws_with<AnomalyError>([&] { tape.backward(y); }, {"the backward of bad_square (called at", here(line), "nan in the gradient of the leaf"}));
}

TYPED_TEST(Anomaly, CustomOpForwardNamesItsCallSite) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  const auto x = tensor<T>({0, 1}, {2});
  const auto no_backward = [](const xt::xarray<T>&, const xt::xarray<T>&) {};
  const int line = __LINE__; const auto call = [&] { custom_op("my_log", xt::xarray<T>(xt::log(x.value())), no_backward, x); };
  EXPECT_TRUE(throws_with<AnomalyError>(call, {"my_log (called at", here(line)}));
}

TYPED_TEST(Anomaly, NanSeedIsReported) {
  using T = TypeParam;
  const DetectAnomalyGuard anomaly;
  GradientTape tape;
  const auto y = tensor<T>({1, 2}, {2}, true) * T(3);
  const xt::xarray<T> seed = {T(1), std::numeric_limits<T>::quiet_NaN()};
  EXPECT_TRUE(throws_with<AnomalyError>([&] { tape.backward(y, seed); }, {"the seed passed to backward produced nan", "index [1]"}));
}

TEST(AnomalyMode, GuardRestoresThePreviousState) {
  EXPECT_FALSE(is_anomaly_enabled());
  {
    const DetectAnomalyGuard on;
    EXPECT_TRUE(is_anomaly_enabled());
    {
      const DetectAnomalyGuard off(false);
      EXPECT_FALSE(is_anomaly_enabled());
      EXPECT_NO_THROW(log(tensor<double>({0}, {1})));
    }
    EXPECT_TRUE(is_anomaly_enabled());
  }
  EXPECT_FALSE(is_anomaly_enabled());
  set_detect_anomaly(true);
  EXPECT_TRUE(is_anomaly_enabled());
  set_detect_anomaly(false);
  EXPECT_FALSE(is_anomaly_enabled());
}

TEST(AnomalyMode, IsPerThread) {
  const DetectAnomalyGuard anomaly;
  bool other_thread_enabled = true;
  bool other_thread_threw = true;
  std::thread other([&] {
    other_thread_enabled = is_anomaly_enabled();
    try {
      log(tensor<double>({0}, {1}));
      other_thread_threw = false;
    } catch (const AnomalyError&) {
    }
  });
  other.join();
  EXPECT_FALSE(other_thread_enabled);
  EXPECT_FALSE(other_thread_threw);
  EXPECT_THROW(log(tensor<double>({0}, {1})), AnomalyError);
}

TEST(AnomalyMode, IsATapegradError) {
  const DetectAnomalyGuard anomaly;
  EXPECT_THROW(log(tensor<double>({0}, {1})), Error);
}

}  // namespace
}  // namespace tapegrad
