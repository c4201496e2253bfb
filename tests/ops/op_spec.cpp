#include "tests/ops/op_spec.h"

#include <algorithm>
#include <tuple>

namespace tapegrad::testing {
namespace {

std::vector<std::vector<OpSpec> (*)()>& makers() {
  static std::vector<std::vector<OpSpec> (*)()> all;
  return all;
}

}  // namespace

Tensor<double> leaf(const Shape& shape, std::uint64_t seed, double low, double high) {
  Generator gen(seed);
  return Tensor<double>::uniform(shape, gen, low, high, /*requires_grad=*/true);
}

Tensor<double> constant(const Shape& shape, std::uint64_t seed, double low, double high) {
  Generator gen(seed);
  return Tensor<double>::uniform(shape, gen, low, high);
}

bool register_op_specs(std::vector<OpSpec> (*make)()) {
  makers().push_back(make);
  return true;
}

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> specs = [] {
    std::vector<OpSpec> all;
    for (auto make : makers())
      for (auto& spec : make()) all.push_back(std::move(spec));
    std::sort(all.begin(), all.end(),
              [](const OpSpec& a, const OpSpec& b) { return std::tie(a.family, a.name) < std::tie(b.family, b.name); });
    return all;
  }();
  return specs;
}

}  // namespace tapegrad::testing
