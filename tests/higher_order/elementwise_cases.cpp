#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

std::vector<OpCase> elementwise_cases() {
  return {
      {"mul_self", [](const auto& x) { return mul(x[0], x[0]); }, [] { return V{leaf({5}, 9)}; }},
      {"mul_constant", [](const auto& x) { return mul(x[0], x[1]); }, [] { return V{leaf({2, 3}, 10), constant({3}, 11)}; }},
      {"abs_of_product", [](const auto& x) { return abs(mul(x[0], x[1])); }, [] { return V{leaf({4}, 29), leaf({4}, 30)}; }},
      {"cast_identity", [](const auto& x) { return mul(x[0].template to<ElementOf<decltype(x)>>(), x[0]); }, [] { return V{leaf({3}, 31)}; }},
  };
}

}  // namespace tapegrad::testing
