#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// logsumexp, var and std over one axis, several, all, with keepdims, and of a product (so an input
// reaches them twice).
std::vector<OpCase> statistics_cases() {
  return {
      OpCase("logsumexp_last_axis", [](const auto& x) { return logsumexp(x[0], {-1}); }, [] { return V{leaf({3, 4}, 1201)}; })
          .at_scale([] { return V{leaf({64, 517}, 1202)}; }),
      {"logsumexp_two_axes_keepdims", [](const auto& x) { return logsumexp(x[0], {0, 2}, true); },
       [] { return V{leaf({2, 3, 4}, 1203)}; }},
      {"logsumexp_of_product", [](const auto& x) { return logsumexp(mul(x[0], x[1]), {0}); },
       [] { return V{leaf({4, 3}, 1204), leaf({3}, 1205)}; }},
      OpCase("var_axis_0", [](const auto& x) { return var(x[0], {0}); }, [] { return V{leaf({4, 3}, 1206)}; })
          .at_scale([] { return V{leaf({307, 71}, 1207)}; }),
      {"var_biased_keepdims", [](const auto& x) { return var(x[0], {1, 2}, 0, true); }, [] { return V{leaf({2, 3, 4}, 1208)}; }},
      {"var_all_of_product", [](const auto& x) { return var(mul(x[0], x[1])); }, [] { return V{leaf({2, 3}, 1209), leaf({3}, 1210)}; }},
      OpCase("std_last_axis", [](const auto& x) { return std(x[0], {-1}); }, [] { return V{leaf({3, 5}, 1211)}; })
          .at_scale([] { return V{leaf({64, 517}, 1212)}; }),
      {"std_all", [](const auto& x) { return std(x[0]); }, [] { return V{leaf({2, 3}, 1213)}; }},
      {"std_correction_2_of_product", [](const auto& x) { return std(mul(x[0], x[0]), {0}, 2); },
       [] { return V{leaf({4, 2}, 1214)}; }},
  };
}

}  // namespace tapegrad::testing
