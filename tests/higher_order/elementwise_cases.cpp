#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

std::vector<OpCase> elementwise_cases() {
  return {
      {"mul_self", [](const V& x) { return mul(x[0], x[0]); }, [] { return V{leaf({5}, 9)}; }},
      {"mul_constant", [](const V& x) { return mul(x[0], x[1]); }, [] { return V{leaf({2, 3}, 10), constant({3}, 11)}; }},
      {"add_scalar", [](const V& x) { return add(x[0], 2.5); }, [] { return V{leaf({4}, 18)}; }},
      {"mul_scalar", [](const V& x) { return mul(x[0], -1.5); }, [] { return V{leaf({2, 2}, 19)}; }},
      {"rsub_scalar", [](const V& x) { return rsub(x[0], 3.0); }, [] { return V{leaf({3}, 20)}; }},
      {"rdiv_scalar", [](const V& x) { return rdiv(x[0], 2.0); }, [] { return V{leaf({2, 3}, 21, 0.5, 2.0)}; }},
      {"pow_scalar", [](const V& x) { return pow(x[0], 3.0); }, [] { return V{leaf({2, 3}, 22)}; }},
      {"pow_scalar_fractional", [](const V& x) { return pow(x[0], 0.5); }, [] { return V{leaf({4}, 23, 0.5, 2.0)}; }},
      {"abs_of_product", [](const V& x) { return abs(mul(x[0], x[1])); }, [] { return V{leaf({4}, 29), leaf({4}, 30)}; }},
      {"cast_identity", [](const V& x) { return mul(x[0].to<double>(), x[0]); }, [] { return V{leaf({3}, 31)}; }},
  };
}

}  // namespace tapegrad::testing
