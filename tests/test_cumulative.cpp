// cumsum and cumprod (autograd/ops/cumulative.h): values and gradients against numbers worked out
// by hand (and checked against PyTorch 1.13), along first, middle and last axes, zeros in
// cumprod's input, 0-d and empty tensors, gradcheck, bad inputs; and at the bottom, their specs.
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using X = xt::xarray<double>;

TEST(Cumsum, ValuesAndReversedCumsumGradient) {
  GradientTape tape;
  const Tensor<double> x(X{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, true);
  const auto y = cumsum(x, 1);
  EXPECT_EQ(y.value(), (X{{1.0, 3.0, 6.0}, {4.0, 9.0, 15.0}}));
  // PyTorch 1.13 with seed g = x: dL/dx[k] = sum of g over positions k and after.
  tape.backward(y, X{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(x.grad(), (X{{6.0, 5.0, 3.0}, {15.0, 11.0, 6.0}}));
}

TEST(Cumsum, FirstAndNegativeAxes) {
  const Tensor<double> x(X{{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
  EXPECT_EQ(cumsum(x, 0).value(), (X{{1.0, 2.0}, {4.0, 6.0}, {9.0, 12.0}}));
  EXPECT_EQ(cumsum(x, -1).value(), (X{{1.0, 3.0}, {3.0, 7.0}, {5.0, 11.0}}));
  // A middle axis of a [2,2,2]: each lane runs along axis 1.
  const Tensor<double> cube(X{{{1.0, 2.0}, {3.0, 4.0}}, {{5.0, 6.0}, {7.0, 8.0}}});
  EXPECT_EQ(cumsum(cube, 1).value(), (X{{{1.0, 2.0}, {4.0, 6.0}}, {{5.0, 6.0}, {12.0, 14.0}}}));
}

TEST(Cumsum, ZeroDimAndEmpty) {
  EXPECT_EQ(cumsum(Tensor<double>(X(5.0)), 0).value(), X(5.0));
  EXPECT_EQ(cumsum(Tensor<double>(X(5.0)), -1).value(), X(5.0));
  EXPECT_EQ(cumsum(Tensor<double>::zeros({2, 0}), 1).shape(), (Shape{2, 0}));
}

TEST(Cumsum, FloatSumsInDouble) {
  // 2^24 + 1 + 1 in float steps loses both ones; PyTorch (and we) accumulate in double.
  const Tensor<float> x(xt::xarray<float>{16777216.0f, 1.0f, 1.0f});
  EXPECT_EQ(cumsum(x, 0).value()(2), 16777218.0f);
}

TEST(Cumsum, Gradcheck) {
  for (const Index dim : {0, 1, 2, -1}) {
    EXPECT_TRUE(passes_gradcheck([dim](const Inputs& x) { return cumsum(x[0], dim); }, {random_tensor({2, 3, 4}, 81)}))
        << "dim " << dim;
  }
}

TEST(Cumsum, BadInputs) {
  EXPECT_TRUE(throws_with<ValueError>([] { cumsum(Tensor<double>::zeros({2, 3}), 2); }, {"cumsum", "axis 2", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { cumsum(Tensor<double>(), 0); }, {"cumsum", "'a'", "undefined"}));
}

TEST(Cumprod, ValuesAndGradient) {
  GradientTape tape;
  const Tensor<double> x(X{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, true);
  const auto y = cumprod(x, 1);
  EXPECT_EQ(y.value(), (X{{1.0, 2.0, 6.0}, {4.0, 20.0, 120.0}}));
  // dL/dx[k] = sum over i >= k of the products up to i without x[k]: 1 + 2 + 2*3 = 9, ...
  tape.backward(sum(y));
  EXPECT_EQ(x.grad(), (X{{9.0, 4.0, 2.0}, {36.0, 28.0, 20.0}}));
}

// The gradient at a zero is not zero (its own factor is left out), and after it every gradient
// is: PyTorch 1.13 gives the same.
TEST(Cumprod, ZerosInTheInput) {
  const std::vector<X> inputs{X{2.0, 0.0, 3.0, 0.5}, X{2.0, 0.0, 3.0, 0.0}, X{0.0, 2.0, 3.0}};
  const std::vector<X> gradients{X{1.0, 11.0, 0.0, 0.0}, X{1.0, 8.0, 0.0, 0.0}, X{9.0, 0.0, 0.0}};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    GradientTape tape;
    const Tensor<double> x(inputs[i], true);
    tape.backward(sum(cumprod(x, 0)));
    EXPECT_EQ(x.grad(), gradients[i]) << "input " << i;
  }
}

// d2/dx0 dx1 of sum(cumprod([x0, x1, x2])) = 1 + x2, also where x1 = 0.
TEST(Cumprod, SecondDerivativeAtAZero) {
  const Tensor<double> x(X{2.0, 0.0, 3.0}, true);
  GradientTape tape(/*persistent=*/true);
  const auto first = tape.gradient(sum(cumprod(x, -1)), {x}, {.create_graph = true});
  EXPECT_EQ(first[0].value(), (X{1.0, 8.0, 0.0}));
  const auto second = tape.gradient(sum(narrow(first[0], 0, 0, 1)), {x});
  EXPECT_EQ(second[0].value(), (X{0.0, 4.0, 0.0}));  // d/dx of 1 + x1 + x1 x2: [0, 1 + x2, x1]
}

TEST(Cumprod, FirstAndNegativeAxesZeroDimAndEmpty) {
  const Tensor<double> x(X{{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
  EXPECT_EQ(cumprod(x, 0).value(), (X{{1.0, 2.0}, {3.0, 8.0}, {15.0, 48.0}}));
  EXPECT_EQ(cumprod(x, -1).value(), (X{{1.0, 2.0}, {3.0, 12.0}, {5.0, 30.0}}));
  EXPECT_EQ(cumprod(Tensor<double>(X(5.0)), -1).value(), X(5.0));
  EXPECT_EQ(cumprod(Tensor<double>::zeros({2, 0}), 1).shape(), (Shape{2, 0}));
}

TEST(Cumprod, Gradcheck) {
  for (const Index dim : {0, 1, 2, -1}) {
    EXPECT_TRUE(passes_gradcheck([dim](const Inputs& x) { return cumprod(x[0], dim); }, {random_tensor({2, 3, 4}, 82)}))
        << "dim " << dim;
  }
}

TEST(Cumprod, BadInputs) {
  EXPECT_TRUE(throws_with<ValueError>([] { cumprod(Tensor<double>::zeros({2, 3}), -3); }, {"cumprod", "axis -3", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { cumprod(Tensor<double>(), 0); }, {"cumprod", "'a'", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using V = std::vector<Tensor<double>>;
using bad_inputs::undefined;
using bad_inputs::zeros;

// torch.cumsum / torch.cumprod(input, dim, dtype=None).
template <class Fn> PyTorchCall running(Fn fn) {
  return [fn](pytorch_samples::Call& c) -> std::vector<Tensor<double>> {
    pytorch_samples::require_float64(c);
    return {fn(c.tensor(c.input()), pytorch_samples::dim_arg(c, 0, 0))};
  };
}

// cumsum is linear: composed with a product, so that the second derivative is not zero.
TAPEGRAD_OP_SPEC(cumsum) {
  OpSpec s("cumsum", "cumulative");
  s.samples = {
      OpCase("cumsum_last_axis_times_input", [](const auto& x) { return mul(cumsum(x[0], -1), x[0]); },
             [] { return V{leaf({3, 4}, 1301)}; })
          .at_scale([] { return V{leaf({97, 1031}, 1302)}; }),
      OpCase("cumsum_middle_axis_of_product", [](const auto& x) { return cumsum(mul(x[0], x[1]), 1); },
             [] { return V{leaf({2, 3, 4}, 1303), leaf({4}, 1304)}; })
          .at_scale([] { return V{leaf({7, 211, 130}, 1305), leaf({130}, 1306)}; }),
      {"cumsum_0d", [](const auto& x) { return mul(cumsum(x[0], 0), x[0]); }, [] { return V{leaf({}, 1307)}; }},
  };
  s.errors = {error_input<ValueError>("cumsum_axis_out_of_range", "`cumsum`", "dim 2 of [2,3]",
                                      [] { return cumsum(zeros({2, 3}), 2); }, {"cumsum", "axis 2", "[2,3]"})};
  s.pytorch = {{"cumsum", running([](const Tensor<double>& x, Index d) { return cumsum(x, d); })}};
  return s;
}

// Factors near 1 keep the long products of the large inputs finite.
TAPEGRAD_OP_SPEC(cumprod) {
  OpSpec s("cumprod", "cumulative");
  s.samples = {
      OpCase("cumprod_last_axis", [](const auto& x) { return cumprod(x[0], -1); },
             [] { return V{leaf({3, 4}, 1321)}; })
          .at_scale([] { return V{leaf({97, 1031}, 1322, 0.9, 1.1)}; }),
      OpCase("cumprod_middle_axis_of_product", [](const auto& x) { return cumprod(mul(x[0], x[1]), 1); },
             [] { return V{leaf({2, 3, 4}, 1323), leaf({4}, 1324)}; })
          .at_scale([] { return V{leaf({7, 211, 130}, 1325, 0.9, 1.1), leaf({130}, 1326, 0.9, 1.1)}; }),
      {"cumprod_first_axis_with_zeros", [](const auto& x) { return cumprod(x[0], -2); },
       [] { return V{Tensor<double>(xt::xarray<double>{{0.5, 0.0, 1.5}, {0.0, 1.2, -0.7}, {0.9, 0.0, 1.1}}, true)}; }},
      {"cumprod_0d", [](const auto& x) { return mul(cumprod(x[0], 0), x[0]); }, [] { return V{leaf({}, 1327)}; }},
  };
  s.errors = {error_input<ValueError>("cumprod_axis_out_of_range", "`cumprod`", "dim -3 of [2,3]",
                                      [] { return cumprod(zeros({2, 3}), -3); }, {"cumprod", "axis -3", "[2,3]"}),
              error_input<ValueError>("cumprod_undefined", "`cumprod`", "undefined a",
                                      [] { return cumprod(undefined(), 0); }, {"cumprod", "'a'", "undefined"})};
  s.pytorch = {{"cumprod", running([](const Tensor<double>& x, Index d) { return cumprod(x, d); })}};
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
