#pragma once
// Shared test helpers: seeded random inputs, a gtest wrapper around gradcheck, and an assertion
// that a call throws a tapegrad error whose message names what it should.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/testing/gradcheck.h"
#include "autograd/testing/gradcheck_gtest.h"
#include "autograd/core/tensor.h"

namespace tapegrad::testing {

// A float64 leaf with values uniform in [low, high), the same for the same seed.
Tensor<double> random_tensor(const Shape& shape, std::uint64_t seed, bool requires_grad = true, double low = -1.0,
                             double high = 1.0);

// EXPECT_TRUE(passes_gradcheck(fn, {a, b})) prints gradcheck's message on failure: the same
// assertion as EXPECT_GRADCHECK (autograd/testing/gradcheck_gtest.h), kept for the suites that call it.
::testing::AssertionResult passes_gradcheck(const GradcheckFunction& fn, const std::vector<Tensor<double>>& inputs,
                                            const GradcheckOptions& options = {});

// Success when fn() throws a tapegrad::Error (of type E) whose what() contains every fragment.
template <class E = Error, class Fn, class Fragments>
::testing::AssertionResult throws_with(Fn&& fn, const Fragments& fragments) {
  try {
    fn();
  } catch (const E& e) {
    const std::string what = e.what();
    for (std::string_view f : fragments) {
      if (what.find(f) == std::string::npos) {
        return ::testing::AssertionFailure() << "message \"" << what << "\" lacks \"" << f << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw the wrong type: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}
template <class E = Error, class Fn>
::testing::AssertionResult throws_with(Fn&& fn, std::initializer_list<std::string_view> fragments) {
  return throws_with<E, Fn, std::initializer_list<std::string_view>>(std::forward<Fn>(fn), fragments);
}

// Largest |a - b| over two arrays of one shape (infinity when the shapes differ).
double max_abs_diff(const xt::xarray<double>& a, const xt::xarray<double>& b);

}  // namespace tapegrad::testing

// The helpers every test file uses, by their short names in namespace tapegrad (where the test
// files live), so that no file repeats the same using-declarations.
namespace tapegrad {
using testing::max_abs_diff;
using testing::passes_gradcheck;
using testing::random_tensor;
using testing::throws_with;
using Inputs = std::vector<Tensor<double>>;  // a gradcheck function's arguments
}  // namespace tapegrad
