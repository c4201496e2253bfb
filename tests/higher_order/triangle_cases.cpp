#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// tril and triu are linear: composed with a product, so that the second derivative is not zero.
std::vector<OpCase> triangle_cases() {
  return {
      OpCase("tril_times_input", [](const auto& x) { return mul(tril(x[0]), x[0]); }, [] { return V{leaf({3, 4}, 1308)}; })
          .at_scale([] { return V{leaf({4, 301, 307}, 1309)}; }),
      {"triu_batch_of_product", [](const auto& x) { return triu(mul(x[0], x[1]), -1); },
       [] { return V{leaf({2, 4, 3}, 1310), leaf({3}, 1311)}; }},
  };
}

}  // namespace tapegrad::testing
