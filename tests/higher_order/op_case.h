#pragma once
// The cases of ops not yet in an op spec (tests/ops/op_spec.h, whose samples are OpCases too) and
// of the nn modules: one OpCase per op and form, as tests/test_higher_order.cpp checks
// every op: gradcheck, gradgradcheck, the same first derivative bit for bit with and without
// create_graph, jvp against vjp, float32 against float64, and the same bits at any thread count.
// Each op family lists its cases in its own file here (higher_order/<family>_cases.cpp); cover
// several shapes, broadcast and masked forms, and every differentiable argument.
//
// Write an op's function once, as a generic lambda (`[](const auto& x) { return exp(x[0]); }`,
// locals `auto`): it is compiled for double and for float. Module cases (module_cases.cpp) hold
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

// A leaf of `shape` with uniform values in [low, high) from its own seed, requiring a gradient.
Tensor<double> leaf(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0);
// The same, not requiring a gradient (an input held constant).
Tensor<double> constant(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0);

// The ops, family by family.
std::vector<OpCase> elementwise_cases();
std::vector<OpCase> pointwise_cases();
std::vector<OpCase> reduce_and_shape_cases();
std::vector<OpCase> linalg_cases();
// einsum in torch's grammar: ellipsis, implicit output, size-1 broadcasting (einsum_cases.cpp).
std::vector<OpCase> einsum_cases();
std::vector<OpCase> norm_attention_loss_cases();
std::vector<OpCase> activation_softmax_masking_cases();
// 0-d axes, empty axis lists, dropout p = 1, broadcast masked_fill, rounding div, maximum /
// minimum, pow of a scalar base, max / min along a dim (zero_dim_and_edge_cases.cpp).
std::vector<OpCase> zero_dim_and_edge_cases();
// gather, scatter_add, index_fill (indexing_cases.cpp).
std::vector<OpCase> indexing_cases();
// binary_cross_entropy, binary_cross_entropy_with_logits (bce_cases.cpp).
std::vector<OpCase> bce_cases();
// Every family above and every sample of the op specs (tests/ops/op_spec.h), in one list
// (test_higher_order.cpp).
std::vector<OpCase> op_cases();
// Every nn module, its inputs followed by all its parameters (module_cases.cpp).
std::vector<OpCase> module_cases();
// clamp, where, topk (selection_cases.cpp).
std::vector<OpCase> selection_cases();
// The losses' class weights, probability targets and log targets (loss_options_cases.cpp).
std::vector<OpCase> loss_options_cases();

}  // namespace tapegrad::testing
