#pragma once
// One function under test and its inputs: a sample of an op spec (tests/ops/op_spec.h) or an nn
// module (tests/higher_order/module_cases.cpp). tests/test_higher_order.cpp checks each: gradcheck, gradgradcheck,
// the same first derivative bit for bit with and without create_graph, jvp against vjp, float32
// against float64, and the same bits at any thread count.
//
// Write an op's function once, as a generic lambda (`[](const auto& x) { return exp(x[0]); }`,
// locals `auto`): it is compiled for double and for float. Module cases hold
// float64 parameters and so run in float64 only.
#include <functional>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/testing/gradcheck.h"
#include "autograd/ops/all.h"

namespace tapegrad::testing {

template <class T> using CaseFunction = std::function<Tensor<T>(const std::vector<Tensor<T>>&)>;
using CaseInputs = std::function<std::vector<Tensor<double>>()>;  // fresh float64 leaves on every call

struct OpCase {
  template <class F>
  OpCase(std::string name, F function, CaseInputs inputs, GradcheckOptions options = {})
      : name(std::move(name)), fn(function), inputs(std::move(inputs)), options(options) {
    if constexpr (std::is_invocable_v<F&, const std::vector<Tensor<float>>&>) fn_float = function;
  }

  // The same case at a size where the kernels split their work across threads (the checks of
  // thread-count independence and float32 agreement use it; the gradient checks stay small).
  OpCase at_scale(CaseInputs large) && {
    large_inputs = std::move(large);
    return std::move(*this);
  }

  std::string name;  // a gtest name: letters, digits and underscores
  GradcheckFunction fn;
  CaseFunction<float> fn_float;  // empty for a function written for double alone
  CaseInputs inputs;
  GradcheckOptions options;  // looser only with a stated reason
  CaseInputs large_inputs;   // empty: inputs() serve every check
  // An op spec's flags (tests/ops/op_spec.h), copied onto each of its samples.
  bool twice_differentiable = true;
  bool deterministic = true;
  double float32_tolerance = 2e-4;
};

// gtest prints a failing case by its name (not as the bytes of the struct).
inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// The element type of a case function's argument, for the casts a generic lambda spells out.
template <class Inputs> using ElementOf = typename std::remove_cvref_t<Inputs>::value_type::value_type;

// A constant of x's element type (a case's function is compiled for float too).
template <class X> auto scalar_of(const X& x, double value) {
  return static_cast<typename std::decay_t<decltype(x[0])>::value_type>(value);
}

// A leaf of `shape` with uniform values in [low, high) from its own seed, requiring a gradient.
Tensor<double> leaf(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0);
// The same, not requiring a gradient (an input held constant).
Tensor<double> constant(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0);

// Every sample of every op spec (tests/ops/op_spec.h), with its spec's flags (test_higher_order.cpp).
std::vector<OpCase> op_cases();
// Every nn module, its inputs followed by all its parameters (module_cases.cpp).
std::vector<OpCase> module_cases();

}  // namespace tapegrad::testing
