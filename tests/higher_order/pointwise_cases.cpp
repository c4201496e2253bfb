#include <tuple>

#include "autograd/ops/pointwise_table.h"
#include "higher_order/op_case.h"
#include "tests/support/pointwise_domain.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// Every row of the pointwise table, from the row's domain: a unary op at a 0-d, a 1-d and a 3-d
// shape; a binary op at equal and broadcast shapes; an op with a scalar at four scalars.
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

  using BinaryOp = Tensor<double> (*)(const Tensor<double>&, const Tensor<double>&, CallSite);
  const auto add_binary_row = [&cases](const std::string& name, BinaryOp op, PointwiseDomain domain_a,
                                       PointwiseDomain domain_b) {
    // Equal shapes, each side broadcast, both sides broadcast, and a 0-d operand.
    const std::vector<std::tuple<std::string, Shape, Shape>> shapes = {{"same", {2, 3}, {2, 3}},
                                                                       {"broadcast_b", {2, 3}, {3}},
                                                                       {"broadcast_a", {2, 1}, {2, 4}},
                                                                       {"broadcast_both", {2, 1, 3}, {4, 1}},
                                                                       {"scalar_b", {3, 2}, {}}};
    std::uint64_t seed = 200;
    for (const auto& [label, shape_a, shape_b] : shapes) {
      cases.push_back({name + "_" + label, [op](const V& x) { return op(x[0], x[1], std::source_location::current()); },
                       [=] {
                         return V{Tensor<double>(pointwise_inputs<double>(domain_a, shape_a, seed), true),
                                  Tensor<double>(pointwise_inputs<double>(domain_b, shape_b, seed + 1), true)};
                       }});
      seed += 2;
    }
  };
#define TAPEGRAD_BINARY_CASES(name, forward, reference, derivative_a, derivative_b, domain_a, domain_b) \
  add_binary_row(#name, &name<double>, PointwiseDomain::domain_a, PointwiseDomain::domain_b);
  TAPEGRAD_BINARY_OPS(TAPEGRAD_BINARY_CASES)
#undef TAPEGRAD_BINARY_CASES

  using ScalarOp = Tensor<double> (*)(const Tensor<double>&, double, CallSite);
  const auto add_scalar_row = [&cases](const std::string& name, ScalarOp op, PointwiseDomain domain,
                                       PointwiseDomain scalars) {
    // Scalars of both signs (unless the row's scalars are positive), an integer and a fraction.
    std::uint64_t seed = 300;
    for (double s : pointwise_scalars<double>(scalars)) {
      cases.push_back({name + "_scalar_" + std::to_string(seed - 299),
                       [op, s](const V& x) { return op(x[0], s, std::source_location::current()); },
                       [domain, seed] { return V{Tensor<double>(pointwise_inputs<double>(domain, {2, 3}, seed), true)}; }});
      ++seed;
    }
  };
#define TAPEGRAD_SCALAR_CASES(name, recorded_name, forward, reference, derivative, domain, scalars) \
  add_scalar_row(#name, &name<double>, PointwiseDomain::domain, PointwiseDomain::scalars);
  TAPEGRAD_SCALAR_OPS(TAPEGRAD_SCALAR_CASES)
#undef TAPEGRAD_SCALAR_CASES
  return cases;
}

}  // namespace tapegrad::testing
