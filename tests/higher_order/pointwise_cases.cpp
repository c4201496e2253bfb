#include "autograd/ops/pointwise_table.h"
#include "higher_order/op_case.h"
#include "tests/support/pointwise_domain.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// Every row of the pointwise table, at a 0-d, a 1-d and a 3-d shape, from the row's domain.
std::vector<OpCase> pointwise_cases() {
  std::vector<OpCase> cases;
  const auto add_row = [&cases](const std::string& name, Tensor<double> (*op)(const Tensor<double>&, CallSite),
                                PointwiseDomain domain) {
    const std::vector<std::pair<std::string, Shape>> shapes = {{"scalar", {}}, {"vector", {7}}, {"3d", {2, 3, 4}}};
    std::uint64_t seed = 100;
    for (const auto& [label, shape] : shapes) {
      cases.push_back({name + "_" + label, [op](const V& x) { return op(x[0], std::source_location::current()); },
                       [domain, shape, seed] {
                         return V{Tensor<double>(pointwise_inputs<double>(domain, shape, seed), true)};
                       }});
      ++seed;
    }
  };
#define TAPEGRAD_UNARY_CASES(name, forward, reference, derivative, domain) \
  add_row(#name, &name<double>, PointwiseDomain::domain);
  TAPEGRAD_UNARY_OPS(TAPEGRAD_UNARY_CASES)
#undef TAPEGRAD_UNARY_CASES
  return cases;
}

}  // namespace tapegrad::testing
