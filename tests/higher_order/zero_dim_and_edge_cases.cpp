#include <type_traits>

#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

namespace {

// A constant of x's element type (the cases are written for float too).
template <class X> auto scalar_of(const X& x, double value) {
  return static_cast<typename std::decay_t<decltype(x[0])>::value_type>(value);
}

const Mask kMask{{true, false, false}, {false, true, false}};

}  // namespace

// Edge cases PyTorch's samples reach: axis 0 / -1 of 0-d tensors, an empty axis list,
// dropout with p = 1, masked_fill of an input broadcast to the mask, div's rounding modes,
// maximum / minimum, pow with a scalar base, and max / min along a dim. Linear or piecewise
// constant ops are composed with a product so the second derivative is not zero. Inputs stay away
// from ties and from the jumps of the rounded quotients (finite differences fail there); the unit
// tests check those points exactly (the quotients here stay inside (2, 2.4) and (-2.4, -2)).
std::vector<OpCase> zero_dim_and_edge_cases() {
  return {
      {"sum_0d_axis_0", [](const auto& x) { return mul(sum(x[0], {0}), x[0]); }, [] { return V{leaf({}, 701)}; }},
      {"mean_0d_axis_minus_1_keepdims", [](const auto& x) { return mul(mean(x[0], {-1}, true), x[0]); },
       [] { return V{leaf({}, 702)}; }},
      {"max_0d_axis_0", [](const auto& x) { return mul(max(x[0], {0}), x[0]); }, [] { return V{leaf({}, 703)}; }},
      {"sum_empty_axes_keepdims", [](const auto& x) { return mul(sum(x[0], {}, true), x[0]); },
       [] { return V{leaf({2, 3}, 704)}; }},
      {"mean_empty_axes", [](const auto& x) { return mul(mean(x[0], {}), x[0]); }, [] { return V{leaf({2, 3}, 705)}; }},
      {"max_empty_axes", [](const auto& x) { return mul(max(x[0], {}), x[0]); }, [] { return V{leaf({3, 2}, 706)}; }},
      {"softmax_0d", [](const auto& x) { return mul(softmax(x[0], 0), x[0]); }, [] { return V{leaf({}, 707)}; }},
      {"log_softmax_0d", [](const auto& x) { return add(log_softmax(x[0], -1), mul(x[0], x[0])); },
       [] { return V{leaf({}, 708)}; }},
      {"transpose_squeeze_index_select_0d",
       [](const auto& x) {
         return mul(mul(transpose(x[0], 0, -1), squeeze(x[0], -1)), index_select(x[0], 0, IndexArray{0}));
       },
       [] { return V{leaf({}, 709)}; }},
      {"dropout_p_one_training",
       [](const auto& x) {
         Generator gen(710);  // p = 1 draws nothing
         return add(dropout(mul(x[0], x[0]), 1.0, true, gen), mul(x[0], x[0]));
       },
       [] { return V{leaf({2, 3}, 711)}; }},
      {"masked_fill_input_broadcast_to_mask",
       [](const auto& x) { return mul(masked_fill(x[0], kMask, scalar_of(x, 0.5)), x[1]); },
       [] { return V{leaf({3}, 712), leaf({2, 3}, 713)}; }},
      {"masked_fill_both_broadcast",
       [](const auto& x) { return mul(masked_fill(x[0], Mask{true, false, true}, scalar_of(x, -1.0)), x[0]); },
       [] { return V{leaf({2, 1}, 714)}; }},
      {"div_trunc_times_input", [](const auto& x) { return mul(div(x[0], x[1], RoundingMode::trunc), x[0]); },
       [] { return V{leaf({2, 3}, 715, 1.1, 1.2), leaf({3}, 716, 0.5, 0.55)}; }},
      {"div_floor_times_input", [](const auto& x) { return mul(div(x[0], x[1], RoundingMode::floor), x[1]); },
       [] { return V{leaf({2, 3}, 717, -1.2, -1.1), leaf({2, 1}, 718, 0.5, 0.55)}; }},
      {"div_none", [](const auto& x) { return div(x[0], x[1], RoundingMode::none); },
       [] { return V{leaf({2, 3}, 719), leaf({3}, 720, 0.5, 1.5)}; }},
      {"maximum_broadcast_times_input", [](const auto& x) { return mul(maximum(x[0], x[1]), x[0]); },
       [] { return V{leaf({2, 1}, 721), leaf({3}, 722)}; }},
      {"minimum_broadcast_times_input", [](const auto& x) { return mul(minimum(x[0], x[1]), x[1]); },
       [] { return V{leaf({2, 3}, 723), leaf({2, 1, 3}, 724)}; }},
      {"pow_scalar_base", [](const auto& x) { return pow(scalar_of(x, 2.0), x[0]); }, [] { return V{leaf({2, 3}, 725)}; }},
      {"pow_fractional_base", [](const auto& x) { return mul(pow(scalar_of(x, 0.5), x[0]), x[0]); },
       [] { return V{leaf({4}, 726)}; }},
      {"max_along_dim", [](const auto& x) { return mul(max(x[0], 1).values, x[1]); },
       [] { return V{leaf({3, 4}, 727), leaf({3}, 728)}; }},
      {"max_along_dim_0_keepdim", [](const auto& x) { return mul(max(x[0], 0, true).values, x[0]); },
       [] { return V{leaf({3, 2, 2}, 729)}; }},
      {"min_along_last_dim_keepdim", [](const auto& x) { return mul(min(x[0], -1, true).values, x[0]); },
       [] { return V{leaf({2, 3, 4}, 730)}; }},
      {"min_0d", [](const auto& x) { return mul(min(x[0], 0).values, x[0]); }, [] { return V{leaf({}, 731)}; }},
  };
}

}  // namespace tapegrad::testing
