#include "autograd/custom_op.h"
#include "autograd/ops/elementwise.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using testing::random_tensor;
using testing::throws_with;
using Inputs = std::vector<Tensor<double>>;

// A user-defined op with the right backward, and one whose backward forgets a factor of 3.
Tensor<double> cube(const Tensor<double>& x, double backward_factor) {
  xt::xarray<double> y = x.value() * x.value() * x.value();
  return custom_op("cube", std::move(y),
                   [x, backward_factor](const xt::xarray<double>& g, const xt::xarray<double>&) {
                     add_gradient(x, xt::xarray<double>(g * backward_factor * x.value() * x.value()));
                   },
                   x);
}

TEST(Gradcheck, PassesACorrectCustomOp) {
  const auto result = gradcheck([](const Inputs& x) { return cube(x[0], 3.0); }, {random_tensor({2, 3}, 1)});
  EXPECT_TRUE(result.ok) << result.message;
  EXPECT_TRUE(result.message.empty());
}

TEST(Gradcheck, CatchesAWrongBackwardAndSaysWhere) {
  auto x = random_tensor({2, 3}, 1);
  x.set_name("x");
  const auto result = gradcheck([](const Inputs& in) { return cube(in[0], 1.0); }, {x});
  EXPECT_FALSE(result.ok);
  for (const char* fragment : {"input 0", "'x'", "[2,3]", "element [0,0]", "analytic", "numeric"}) {
    EXPECT_NE(result.message.find(fragment), std::string::npos) << result.message << " lacks " << fragment;
  }
}

TEST(Gradcheck, CatchesAGradientThatIsMissingForOneInput) {
  // The backward forgets b: its analytic Jacobian is zero while the numeric one is not.
  const auto forgets_b = [](const Inputs& x) {
    xt::xarray<double> y = x[0].value() * x[1].value();
    const Tensor<double> a = x[0], b = x[1];
    return custom_op("forgetful_mul", std::move(y),
                     [a, b](const xt::xarray<double>& g, const xt::xarray<double>&) {
                       add_gradient(a, xt::xarray<double>(g * b.value()));
                     },
                     a, b);
  };
  const auto result = gradcheck(forgets_b, {random_tensor({3}, 1), random_tensor({3}, 2)});
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.message.find("input 1"), std::string::npos) << result.message;
}

TEST(Gradcheck, ChecksEveryOutputElementOfANonScalarOutput) {
  // Wrong only in the gradient reaching output element [1]: a full Jacobian must see it.
  const auto wrong_second_row = [](const Inputs& x) {
    const Tensor<double> a = x[0];
    return custom_op("odd", xt::xarray<double>(a.value() * 2.0),
                     [a](const xt::xarray<double>& g, const xt::xarray<double>&) {
                       xt::xarray<double> d = g * 2.0;
                       d(1) = g(1);  // should be 2 * g(1)
                       add_gradient(a, std::move(d));
                     },
                     a);
  };
  const auto result = gradcheck(wrong_second_row, {random_tensor({3}, 4)});
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.message.find("output element [1]"), std::string::npos) << result.message;
}

TEST(Gradcheck, InputsWithoutRequiresGradAreHeldConstant) {
  const auto constant = random_tensor({3}, 2, /*requires_grad=*/false);
  EXPECT_TRUE(testing::passes_gradcheck([](const Inputs& x) { return x[0] * x[1]; }, {random_tensor({3}, 1), constant}));
}

TEST(Gradcheck, TolerancesAreTheCallersToSet) {
  // A backward off by 1%: within rtol 0.1, outside PyTorch's default rtol 1e-3.
  const auto slightly_off = [](const Inputs& x) { return cube(x[0], 3.03); };
  const auto x = random_tensor({4}, 3, true, 0.5, 1.0);
  EXPECT_FALSE(gradcheck(slightly_off, {x}).ok);
  EXPECT_TRUE(gradcheck(slightly_off, {x}, {.eps = 1e-6, .atol = 1e-5, .rtol = 0.1}).ok);
}

TEST(Gradcheck, RejectsNonLeafAndUndefinedInputs) {
  const auto identity = [](const Inputs& x) { return x[0]; };
  EXPECT_TRUE(throws_with<ValueError>([&] { gradcheck(identity, {Tensor<double>()}); }, {"gradcheck", "undefined"}));
  const auto x = random_tensor({2}, 1);
  GradientTape tape;
  const auto not_leaf = x * 2.0;
  EXPECT_TRUE(throws_with<ValueError>([&] { gradcheck(identity, {not_leaf}); }, {"gradcheck", "leaf"}));
}

}  // namespace
}  // namespace tapegrad
