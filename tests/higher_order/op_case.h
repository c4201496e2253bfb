#pragma once
// One op (or module) on float64 inputs, as tests/test_higher_order.cpp checks every op: gradcheck,
// gradgradcheck, and the same first derivative, bit for bit, with and without create_graph.
// Each op family lists its cases in its own file here (higher_order/<family>_cases.cpp); cover
// several shapes, broadcast and masked forms, and every differentiable argument.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"

namespace tapegrad::testing {

struct OpCase {
  std::string name;  // a gtest name: letters, digits and underscores
  GradcheckFunction fn;
  std::function<std::vector<Tensor<double>>()> inputs;  // fresh leaves on every call
  GradcheckOptions options = {};                       // looser only with a stated reason
};

// gtest prints a failing case by its name (not as the bytes of the struct).
inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// A leaf of `shape` with uniform values in [low, high) from its own seed, requiring a gradient.
Tensor<double> leaf(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0);
// The same, not requiring a gradient (an input held constant).
Tensor<double> constant(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0);

std::vector<OpCase> elementwise_cases();
std::vector<OpCase> pointwise_cases();
std::vector<OpCase> reduce_and_shape_cases();
std::vector<OpCase> linalg_cases();
std::vector<OpCase> norm_attention_loss_cases();
std::vector<OpCase> activation_softmax_masking_cases();
// Issue 13 part 3: 0-d axes, empty axis lists, dropout p = 1, broadcast masked_fill, rounding
// div, maximum / minimum, pow of a scalar base, max / min along a dim (part3_cases.cpp).
std::vector<OpCase> part3_cases();
// Every nn module, its inputs followed by all its parameters (module_cases.cpp).
std::vector<OpCase> module_cases();

}  // namespace tapegrad::testing
