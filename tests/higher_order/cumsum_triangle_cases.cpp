#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// cumsum, tril and triu are linear: composed with a product, so that the second derivative is not
// zero.
std::vector<OpCase> cumsum_triangle_cases() {
  return {
      OpCase("cumsum_last_axis_times_input", [](const auto& x) { return mul(cumsum(x[0], -1), x[0]); },
             [] { return V{leaf({3, 4}, 1301)}; })
          .at_scale([] { return V{leaf({97, 1031}, 1302)}; }),
      OpCase("cumsum_middle_axis_of_product", [](const auto& x) { return cumsum(mul(x[0], x[1]), 1); },
             [] { return V{leaf({2, 3, 4}, 1303), leaf({4}, 1304)}; })
          .at_scale([] { return V{leaf({7, 211, 130}, 1305), leaf({130}, 1306)}; }),
      {"cumsum_0d", [](const auto& x) { return mul(cumsum(x[0], 0), x[0]); }, [] { return V{leaf({}, 1307)}; }},
      OpCase("tril_times_input", [](const auto& x) { return mul(tril(x[0]), x[0]); }, [] { return V{leaf({3, 4}, 1308)}; })
          .at_scale([] { return V{leaf({4, 301, 307}, 1309)}; }),
      {"triu_batch_of_product", [](const auto& x) { return triu(mul(x[0], x[1]), -1); },
       [] { return V{leaf({2, 4, 3}, 1310), leaf({3}, 1311)}; }},
  };
}

}  // namespace tapegrad::testing
