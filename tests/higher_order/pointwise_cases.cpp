#include <tuple>

#include "autograd/ops/pointwise_table.h"
#include "higher_order/op_case.h"
#include "tests/support/pointwise_domain.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

namespace {

// Leaves of `shape` drawn from the domain, one seed apart.
CaseInputs domain_leaves(std::vector<std::pair<PointwiseDomain, Shape>> operands, std::uint64_t seed) {
  return [operands = std::move(operands), seed] {
    V leaves;
    for (std::size_t i = 0; i < operands.size(); ++i)
      leaves.emplace_back(pointwise_inputs<double>(operands[i].first, operands[i].second, seed + i), true);
    return leaves;
  };
}

}  // namespace

// Every row of the pointwise table, from the row's domain: a unary op at a 0-d, a 1-d and a 3-d
// shape; a binary op at equal and broadcast shapes; an op with a scalar at four scalars. The 3-d,
// broadcast_both and first scalar forms also come at a size of several parallel blocks.
std::vector<OpCase> pointwise_cases() {
  std::vector<OpCase> cases;
  const auto add_row = [&cases](const std::string& name, auto op, PointwiseDomain domain) {
    cases.emplace_back(name + "_scalar", op, domain_leaves({{domain, {}}}, 100));
    cases.emplace_back(name + "_vector", op, domain_leaves({{domain, {7}}}, 101));
    cases.push_back(OpCase(name + "_3d", op, domain_leaves({{domain, {2, 3, 4}}}, 102))
                        .at_scale(domain_leaves({{domain, {5, 97, 131}}}, 103)));
  };
#define TAPEGRAD_UNARY_CASES(name, forward, reference, derivative, domain) \
  add_row(#name, [](const auto& x) { return name(x[0]); }, PointwiseDomain::domain);
  TAPEGRAD_UNARY_OPS(TAPEGRAD_UNARY_CASES)
#undef TAPEGRAD_UNARY_CASES

  const auto add_binary_row = [&cases](const std::string& name, auto op, PointwiseDomain domain_a,
                                       PointwiseDomain domain_b) {
    // Equal shapes, each side broadcast, both sides broadcast, and a 0-d operand.
    const std::vector<std::tuple<std::string, Shape, Shape>> shapes = {{"same", {2, 3}, {2, 3}},
                                                                       {"broadcast_b", {2, 3}, {3}},
                                                                       {"broadcast_a", {2, 1}, {2, 4}},
                                                                       {"broadcast_both", {2, 1, 3}, {4, 1}},
                                                                       {"scalar_b", {3, 2}, {}}};
    std::uint64_t seed = 200;
    for (const auto& [label, shape_a, shape_b] : shapes) {
      OpCase c(name + "_" + label, op, domain_leaves({{domain_a, shape_a}, {domain_b, shape_b}}, seed));
      if (label == "broadcast_both") c = std::move(c).at_scale(domain_leaves({{domain_a, {3, 1, 301}}, {domain_b, {89, 1}}}, seed));
      cases.push_back(std::move(c));
      seed += 2;
    }
  };
#define TAPEGRAD_BINARY_CASES(name, forward, reference, derivative_a, derivative_b, domain_a, domain_b) \
  add_binary_row(#name, [](const auto& x) { return name(x[0], x[1]); }, PointwiseDomain::domain_a, PointwiseDomain::domain_b);
  TAPEGRAD_BINARY_OPS(TAPEGRAD_BINARY_CASES)
#undef TAPEGRAD_BINARY_CASES

  const auto add_scalar_row = [&cases](const std::string& name, auto op, PointwiseDomain domain,
                                       PointwiseDomain scalars) {
    // Scalars of both signs (unless the row's scalars are positive), an integer and a fraction.
    std::uint64_t seed = 300;
    for (double s : pointwise_scalars<double>(scalars)) {
      const auto with_s = [op, s](const auto& x) { return op(x[0], s); };
      OpCase c(name + "_scalar_" + std::to_string(seed - 299), with_s, domain_leaves({{domain, {2, 3}}}, seed));
      if (seed == 300) c = std::move(c).at_scale(domain_leaves({{domain, {7, 6007}}}, seed));
      cases.push_back(std::move(c));
      ++seed;
    }
  };
#define TAPEGRAD_SCALAR_CASES(name, recorded_name, forward, reference, derivative, domain, scalars) \
  add_scalar_row(#name, [](const auto& a, double s) { return name(a, s); }, PointwiseDomain::domain, PointwiseDomain::scalars);
  TAPEGRAD_SCALAR_OPS(TAPEGRAD_SCALAR_CASES)
#undef TAPEGRAD_SCALAR_CASES

  // pow at the edge of its domain: a zero base (and a nonzero one) under the exponents 0, 1, 2
  // and 3, held constant (the exponent's derivative has no finite difference at a zero base).
  // Exact there: d/da = 0, 1, 0, 0 and d2/da2 = 0, 0, 2, 0.
  cases.emplace_back(
      "pow_zero_base_integer_exponents", [](const auto& x) { return pow(x[0], x[1]); }, [] {
        return V{Tensor<double>(xt::xarray<double>{{0.0, 0.0, 0.0, 0.0}, {0.5, -0.7, 1.3, -1.1}}, true),
                 Tensor<double>(xt::xarray<double>{0.0, 1.0, 2.0, 3.0})};
      });
  return cases;
}

}  // namespace tapegrad::testing
