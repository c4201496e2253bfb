// tril and triu (autograd/ops/triangular.h): values against the definition (j - i against the
// diagonal) written out by hand and checked against PyTorch 1.13, batches, far diagonals, gradients,
// bad inputs; and at the bottom, their specs.
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using X = xt::xarray<double>;

// [3,4] with elements 0..11.
Tensor<double> grid(bool requires_grad = false) {
  return Tensor<double>(X{{0.0, 1.0, 2.0, 3.0}, {4.0, 5.0, 6.0, 7.0}, {8.0, 9.0, 10.0, 11.0}}, requires_grad);
}

TEST(Triangular, DiagonalsAsPyTorch) {
  EXPECT_EQ(tril(grid()).value(), (X{{0.0, 0.0, 0.0, 0.0}, {4.0, 5.0, 0.0, 0.0}, {8.0, 9.0, 10.0, 0.0}}));
  EXPECT_EQ(tril(grid(), -1).value(), (X{{0.0, 0.0, 0.0, 0.0}, {4.0, 0.0, 0.0, 0.0}, {8.0, 9.0, 0.0, 0.0}}));
  EXPECT_EQ(triu(grid()).value(), (X{{0.0, 1.0, 2.0, 3.0}, {0.0, 5.0, 6.0, 7.0}, {0.0, 0.0, 10.0, 11.0}}));
  EXPECT_EQ(triu(grid(), 1).value(), (X{{0.0, 1.0, 2.0, 3.0}, {0.0, 0.0, 6.0, 7.0}, {0.0, 0.0, 0.0, 11.0}}));
  // Far diagonals keep everything or nothing.
  EXPECT_EQ(tril(grid(), 100).value(), grid().value());
  EXPECT_EQ(triu(grid(), -100).value(), grid().value());
  EXPECT_EQ(tril(grid(), -100).value(), X(xt::zeros<double>({3, 4})));
}

TEST(Triangular, BatchesUseTheLastTwoAxes) {
  const Tensor<double> x(X{{{1.0, 2.0}, {3.0, 4.0}}, {{5.0, 6.0}, {7.0, 8.0}}});
  EXPECT_EQ(tril(x).value(), (X{{{1.0, 0.0}, {3.0, 4.0}}, {{5.0, 0.0}, {7.0, 8.0}}}));
  EXPECT_EQ(triu(x, 1).value(), (X{{{0.0, 2.0}, {0.0, 0.0}}, {{0.0, 6.0}, {0.0, 0.0}}}));
  EXPECT_EQ(tril(Tensor<double>::zeros({2, 0, 3})).shape(), (Shape{2, 0, 3}));
  EXPECT_EQ(triu(Tensor<double>::zeros({3, 0})).shape(), (Shape{3, 0}));
}

TEST(Triangular, GradientIsTheSameTriangleOfG) {
  GradientTape tape(true);  // records both ops; each backward starts at its own output
  const auto x = grid(true);
  tape.backward(tril(x, 1), X(xt::ones<double>({3, 4})));
  EXPECT_EQ(x.grad(), (X{{1.0, 1.0, 0.0, 0.0}, {1.0, 1.0, 1.0, 0.0}, {1.0, 1.0, 1.0, 1.0}}));
  const auto x2 = grid(true);
  tape.backward(triu(x2, -1), X(xt::ones<double>({3, 4})));
  EXPECT_EQ(x2.grad(), (X{{1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}, {0.0, 1.0, 1.0, 1.0}}));
}

TEST(Triangular, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return tril(x[0], -1); }, {random_tensor({2, 3, 4}, 91)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return triu(x[0], 2); }, {random_tensor({4, 3}, 92)}));
}

TEST(Triangular, BadInputs) {
  EXPECT_TRUE(throws_with<ShapeError>([] { tril(Tensor<double>::zeros({3})); }, {"tril", "[3]", "1 dims", "at least 2"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { triu(Tensor<double>::zeros({})); }, {"triu", "[]", "0 dims"}));
  EXPECT_TRUE(throws_with<ValueError>([] { tril(Tensor<double>()); }, {"tril", "'a'", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using V = std::vector<Tensor<double>>;
using bad_inputs::zeros;

// torch.tril / torch.triu(input, diagonal=0), the diagonal positional or a keyword.
template <class Fn> PyTorchCall triangle(Fn fn) {
  return [fn](pytorch_samples::Call& c) -> std::vector<Tensor<double>> {
    const pytorch_samples::Value* diagonal = c.kwarg("diagonal");
    const Index d = c.has_arg(0) ? c.integer(c.arg(0)) : diagonal ? c.integer(*diagonal) : 0;
    return {fn(c.tensor(c.input()), d)};
  };
}

// tril and triu are linear: composed with a product, so that the second derivative is not zero.
TAPEGRAD_OP_SPEC(tril) {
  OpSpec s("tril", "triangular");
  s.samples = {OpCase("tril_times_input", [](const auto& x) { return mul(tril(x[0]), x[0]); },
                      [] { return V{leaf({3, 4}, 1308)}; })
                   .at_scale([] { return V{leaf({4, 301, 307}, 1309)}; })};
  s.errors = {error_input<ShapeError>("tril_of_vector", "`tril`", "a [3] vector", [] { return tril(zeros({3})); },
                                      {"tril", "[3]", "at least 2"})};
  s.pytorch = {{"tril", triangle([](const Tensor<double>& x, Index d) { return tril(x, d); })}};
  return s;
}

TAPEGRAD_OP_SPEC(triu) {
  OpSpec s("triu", "triangular");
  s.samples = {{"triu_batch_of_product", [](const auto& x) { return triu(mul(x[0], x[1]), -1); },
                [] { return V{leaf({2, 4, 3}, 1310), leaf({3}, 1311)}; }}};
  s.errors = {error_input<ShapeError>("triu_of_0d", "`triu`", "a 0-d tensor", [] { return triu(zeros({}), 1); },
                                      {"triu", "[]", "at least 2"})};
  s.pytorch = {{"triu", triangle([](const Tensor<double>& x, Index d) { return triu(x, d); })}};
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
