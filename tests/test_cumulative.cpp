// cumsum (autograd/ops/cumulative.h): values and gradients against numbers worked out by hand
// (and checked against PyTorch 1.13), along first, middle and last axes, 0-d and empty tensors,
// gradcheck, bad inputs.
#include "autograd/ops/cumulative.h"
#include "autograd/core/tape.h"
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

}  // namespace
}  // namespace tapegrad
