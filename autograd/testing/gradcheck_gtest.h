#pragma once
// GoogleTest assertions for gradcheck and gradgradcheck (autograd/testing/gradcheck.h), for your own tests:
//
//   auto f = [](const std::vector<Tensor<double>>& x) { return my_op(x[0], x[1]); };
//   EXPECT_GRADCHECK(f, {a, b});                      // float64: PyTorch's tolerances
//   ASSERT_GRADCHECK(f, {a, b}, {.fast_mode = true}); // any GradcheckOptions
//   EXPECT_GRADCHECK(g, {a32});                       // g on Tensor<float>: float32 mode
//   EXPECT_GRADGRADCHECK(f, {a, b});
//
// A failure prints gradcheck's message: the worst element, analytic vs numeric, the estimated
// numeric error and the ops that read the input. The inputs and options may be braced lists (the
// macros take them as __VA_ARGS__), but the function is one macro argument: name a lambda that
// captures several variables ([a, b] splits at its comma) before passing it.
// Header-only; the test target links GTest itself.
#include <gtest/gtest.h>

#include "autograd/testing/gradcheck.h"

namespace tapegrad::testing {

// A GradcheckResult as a GoogleTest assertion: failure carries the message.
inline ::testing::AssertionResult gradcheck_assertion(const GradcheckResult& result) {
  if (result) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << result.message;
}

}  // namespace tapegrad::testing

#define EXPECT_GRADCHECK(fn, ...) \
  EXPECT_TRUE(::tapegrad::testing::gradcheck_assertion(::tapegrad::gradcheck(fn, __VA_ARGS__)))
#define ASSERT_GRADCHECK(fn, ...) \
  ASSERT_TRUE(::tapegrad::testing::gradcheck_assertion(::tapegrad::gradcheck(fn, __VA_ARGS__)))
#define EXPECT_GRADGRADCHECK(fn, ...) \
  EXPECT_TRUE(::tapegrad::testing::gradcheck_assertion(::tapegrad::gradgradcheck(fn, __VA_ARGS__)))
#define ASSERT_GRADGRADCHECK(fn, ...) \
  ASSERT_TRUE(::tapegrad::testing::gradcheck_assertion(::tapegrad::gradgradcheck(fn, __VA_ARGS__)))
