// kl_div with log_target = true, against PyTorch 1.13's values and the definition
// exp(t) * (t - x) written out per element.
#include <cmath>
#include <limits>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

TEST(KlDivLogTarget, KnownPyTorchValuesAndGradients) {
  // PyTorch 1.13, float64: l = F.kl_div(x, t, reduction='batchmean', log_target=True); l.backward().
  const Tensor<double> x(xt::xarray<double>{{-1.0, -2.0, -0.5}, {-0.25, -3.0, -1.5}}, true);
  const Tensor<double> t(xt::xarray<double>{{-0.5, -1.5, -2.0}, {-1.0, -0.1, -4.0}}, true);
  GradientTape tape;
  const auto loss = kl_div(x, t, Reduction::BatchMean, true);
  EXPECT_NEAR(loss.item(), 1.257078659639739, 1e-14);
  tape.backward(loss);
  EXPECT_LT(max_abs_diff(x.grad(), xt::xarray<double>{{-0.3032653298563167, -0.11156508007421491, -0.06766764161830635},
                                                      {-0.18393972058572117, -0.45241870901797976, -0.00915781944436709}}),
            1e-15);
  EXPECT_LT(max_abs_diff(t.grad(), xt::xarray<double>{{0.45489799478447507, 0.16734762011132237, -0.033833820809153176},
                                                      {0.04598493014643029, 1.764432965170121, -0.013736729166550634}}),
            1e-14);
}

TEST(KlDivLogTarget, EveryReductionMatchesTheDefinition) {
  const auto x = random_tensor({3, 4}, 71, false, -3.0, 0.0);
  const auto t = random_tensor({3, 4}, 72, false, -3.0, 0.0);
  xt::xarray<double> each = xt::zeros<double>({3, 4});
  double total = 0.0;
  for (std::size_t i = 0; i < each.size(); ++i) {
    const double tv = t.value().data()[i];
    each.data()[i] = std::exp(tv) * (tv - x.value().data()[i]);
    total += each.data()[i];
  }
  EXPECT_LT(max_abs_diff(kl_div(x, t, Reduction::None, true).value(), each), 1e-15);
  EXPECT_NEAR(kl_div(x, t, Reduction::Sum, true).item(), total, 1e-13);
  EXPECT_NEAR(kl_div(x, t, Reduction::Mean, true).item(), total / 12.0, 1e-14);
  EXPECT_NEAR(kl_div(x, t, Reduction::BatchMean, true).item(), total / 3.0, 1e-14);
  // The same divergence as with the probabilities exp(t) as target.
  EXPECT_LT(max_abs_diff(kl_div(x, t, Reduction::None, true).value(), kl_div(x, exp(t), Reduction::None).value()), 1e-15);
}

TEST(KlDivLogTarget, MinusInfTargetIsAZeroProbability) {
  // PyTorch 1.13 gives NaN there (exp(-inf) * -inf); here, as a target of 0 without log_target,
  // the element's loss and its gradients are 0.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor<double> x(xt::xarray<double>{-1.0, -2.0, -inf}, true);
  const Tensor<double> t(xt::xarray<double>{-inf, -0.5, -inf}, true);
  GradientTape tape;
  const auto loss = kl_div(x, t, Reduction::Sum, true);
  EXPECT_DOUBLE_EQ(loss.item(), std::exp(-0.5) * 1.5);
  const auto grads = tape.gradient(loss, {x, t});
  EXPECT_EQ(grads[0].value(), (xt::xarray<double>{0.0, -std::exp(-0.5), 0.0}));
  EXPECT_EQ(grads[1].value(), (xt::xarray<double>{0.0, std::exp(-0.5) * 2.5, 0.0}));
}

TEST(KlDivLogTarget, GradcheckInBothArgumentsOverReductions) {
  for (Reduction r : {Reduction::None, Reduction::Sum, Reduction::Mean, Reduction::BatchMean}) {
    SCOPED_TRACE(int(r));
    EXPECT_TRUE(passes_gradcheck([r](const Inputs& x) { return kl_div(x[0], x[1], r, true); },
                                 {random_tensor({2, 3}, 73, true, -2.0, 0.0), random_tensor({2, 3}, 74, true, -2.0, 0.0)}));
  }
}

}  // namespace
}  // namespace tapegrad
