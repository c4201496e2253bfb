// Every op's second order: gradgradcheck against central differences of the first derivative,
// and the first derivative the same, bit for bit, whether or not the backward is recorded
// (GradientOptions::create_graph). The cases are listed per op family in higher_order/.
#include <cstring>

#include <gtest/gtest.h>

#include "autograd/tape.h"
#include "higher_order/op_case.h"

namespace tapegrad::testing {

Tensor<double> leaf(const Shape& shape, std::uint64_t seed, double low, double high) {
  Generator gen(seed);
  return Tensor<double>::uniform(shape, gen, low, high, /*requires_grad=*/true);
}

Tensor<double> constant(const Shape& shape, std::uint64_t seed, double low, double high) {
  Generator gen(seed);
  return Tensor<double>::uniform(shape, gen, low, high);
}

namespace {

std::vector<OpCase> all_cases() {
  std::vector<OpCase> all;
  for (auto family : {elementwise_cases, reduce_and_shape_cases, activation_softmax_masking_cases}) {
    for (auto& c : family()) all.push_back(std::move(c));
  }
  return all;
}

class EveryOp : public ::testing::TestWithParam<OpCase> {};

// The gradients of sum(fn(x) * v) for a fixed v, with or without create_graph.
std::vector<Tensor<double>> first_derivative(const OpCase& c, const std::vector<Tensor<double>>& x, bool create_graph) {
  std::vector<Tensor<double>> sources;
  for (const auto& t : x)
    if (t.requires_grad()) sources.push_back(t);
  GradientTape tape;
  const Tensor<double> out = c.fn(x);
  Generator gen(7);
  const Tensor<double> v = Tensor<double>::uniform(out.shape(), gen, 0.5, 1.5);
  return tape.gradient(sum(mul(out, v)), sources, {.create_graph = create_graph});
}

TEST_P(EveryOp, FirstDerivativeIsBitIdenticalWithCreateGraph) {
  const OpCase& c = GetParam();
  const auto x = c.inputs();
  const auto plain = first_derivative(c, x, false);
  const auto recorded = first_derivative(c, x, true);
  ASSERT_EQ(plain.size(), recorded.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(plain[i].shape(), recorded[i].shape()) << "source " << i;
    EXPECT_EQ(std::memcmp(plain[i].value().data(), recorded[i].value().data(), plain[i].numel() * sizeof(double)), 0)
        << "source " << i << ": the recorded backward computes other bits than the first-order one";
  }
}

TEST_P(EveryOp, Gradcheck) {
  const OpCase& c = GetParam();
  const auto result = gradcheck(c.fn, c.inputs(), c.options);
  EXPECT_TRUE(result) << result.message;
}

TEST_P(EveryOp, Gradgradcheck) {
  const OpCase& c = GetParam();
  const auto result = gradgradcheck(c.fn, c.inputs(), c.options);
  EXPECT_TRUE(result) << result.message;
}

INSTANTIATE_TEST_SUITE_P(Ops, EveryOp, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tapegrad::testing
