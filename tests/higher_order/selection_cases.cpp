#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// clamp, where and topk pass each element from one input, so they are linear where differentiable:
// composed with a product, so that the second derivative is not zero. Inputs stay away from the
// bounds, where the derivative jumps.
std::vector<OpCase> selection_cases() {
  return {
      OpCase("clamp_scalar_bounds_times_input", [](const auto& x) { return mul(clamp(x[0], -0.5, 0.55), x[0]); },
             [] { return V{leaf({3, 4}, 1001)}; })
          .at_scale([] { return V{leaf({5, 97, 131}, 1002)}; }),
      {"clamp_min_only_of_square", [](const auto& x) { return clamp(mul(x[0], x[0]), 0.3, std::nullopt); },
       [] { return V{leaf({2, 5}, 1003)}; }},
      {"clamp_max_only_times_input", [](const auto& x) { return mul(clamp(x[0], std::nullopt, 0.1), x[0]); },
       [] { return V{leaf({4}, 1004)}; }},
      OpCase("clamp_tensor_bounds_broadcast",
             [](const auto& x) { return mul(clamp(x[0], x[1], x[2]), x[0]); },
             [] { return V{leaf({2, 3}, 1005), leaf({3}, 1006, -1.0, -0.3), leaf({2, 1}, 1007, 0.3, 1.0)}; })
          .at_scale([] { return V{leaf({211, 300}, 1008), leaf({300}, 1009, -1.0, -0.3), leaf({211, 1}, 1010, 0.3, 1.0)}; }),
      {"clamp_tensor_min_only_times_min",
       [](const auto& x) {
         using T = ElementOf<decltype(x)>;
         return mul(clamp(x[0], x[1], Tensor<T>()), x[1]);
       },
       [] { return V{leaf({3, 2}, 1011), leaf({3, 1}, 1012)}; }},
      OpCase("where_broadcast_of_products",
             [](const auto& x) {
               Mask condition{true, false, true};  // a column: {{true}, {false}, {true}} is ambiguous to xtensor
               condition.reshape({3, 1});
               return tapegrad::where(condition, mul(x[0], x[0]), mul(x[1], x[0]));
             },
             [] { return V{leaf({3, 4}, 1013), leaf({4}, 1014)}; })
          .at_scale([] { return V{leaf({3, 40001}, 1015), leaf({40001}, 1016)}; }),
      {"where_0d_b_times_a", [](const auto& x) { return mul(tapegrad::where(Mask{true, false, false}, x[0], x[1]), x[0]); },
       [] { return V{leaf({2, 3}, 1017), leaf({}, 1018)}; }},
      // topk: random inputs have no ties, so the selection is stable under gradcheck's steps.
      OpCase("topk_last_axis_times_other", [](const auto& x) { return mul(topk(x[0], 2).values, x[1]); },
             [] { return V{leaf({3, 5}, 1019), leaf({3, 2}, 1020)}; })
          .at_scale([] { return V{leaf({4000, 33}, 1021), leaf({4000, 2}, 1022)}; }),
      {"topk_dim_0_smallest_unsorted_squared",
       [](const auto& x) {
         const auto v = topk(x[0], 2, 0, false, false).values;
         return mul(v, v);
       },
       [] { return V{leaf({4, 2, 3}, 1023)}; }},
      OpCase("topk_middle_axis_all_broadcast",
             [](const auto& x) { return mul(topk(x[0], 3, -2).values, x[1]); },
             [] { return V{leaf({2, 3, 2}, 1024), leaf({2}, 1025)}; })
          .at_scale([] { return V{leaf({50, 40, 30}, 1026), leaf({30}, 1027)}; }),
      {"topk_0d_times_input", [](const auto& x) { return mul(topk(x[0], 1, 0).values, x[0]); },
       [] { return V{leaf({}, 1028)}; }},
  };
}

}  // namespace tapegrad::testing
