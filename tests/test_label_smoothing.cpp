// nn::LabelSmoothing (nn/label_smoothing.h): the smoothed distribution and the loss against numbers
// worked by hand (and matched with the Annotated Transformer's class under PyTorch 1.13), its
// gradient, bad arguments.
#include <cmath>

#include "autograd/core/tape.h"
#include "nn/label_smoothing.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using A = xt::xarray<double>;

// Four rows of log [0.1, 0.2, 0.4, 0.2, 0.1]; targets 2, 1, padding (0), 3.
Tensor<double> log_predictions(bool requires_grad = false) {
  const A row = {0.1, 0.2, 0.4, 0.2, 0.1};
  A x = xt::log(xt::xarray<double>(xt::broadcast(row, {4, 5})));
  return Tensor<double>(std::move(x), requires_grad);
}
const IndexArray kTargets{2, 1, 0, 3};

TEST(LabelSmoothing, SmoothedOneHotZeroesPaddingColumnAndRows) {
  nn::LabelSmoothing<double> crit(5, 0, 0.4);
  crit(log_predictions(), kTargets);
  const double a = 0.4 / 3;  // smoothing / (size - 2)
  const A expected = {{0, a, 0.6, a, a}, {0, 0.6, a, a, a}, {0, 0, 0, 0, 0}, {0, a, a, 0.6, a}};
  EXPECT_TRUE(xt::allclose(crit.true_dist(), expected, 1e-15, 0));
}

TEST(LabelSmoothing, LossIsSummedKlDivergence) {
  nn::LabelSmoothing<double> crit(5, 0, 0.4);
  const auto x = log_predictions(true);
  GradientTape tape;
  const auto loss = crit(x, kTargets);
  // sum over the entries q > 0 of q (log q - x), row by row.
  const double a = 0.4 / 3;
  const auto term = [](double q, double p) { return q * (std::log(q) - std::log(p)); };
  const double row_target_2 = term(a, 0.2) + term(0.6, 0.4) + term(a, 0.2) + term(a, 0.1);
  const double row_target_1 = term(0.6, 0.2) + term(a, 0.4) + term(a, 0.2) + term(a, 0.1);
  const double row_target_3 = term(a, 0.2) + term(a, 0.4) + term(0.6, 0.2) + term(a, 0.1);
  EXPECT_NEAR(loss.value()(), row_target_2 + row_target_1 + row_target_3, 1e-15);
  EXPECT_NEAR(loss.value()(), 1.1674753056114917, 1e-15);  // PyTorch 1.13
  // d/dx = -true_dist.
  EXPECT_TRUE(xt::allclose(tape.gradient(loss, {x})[0].value(), -crit.true_dist(), 1e-15, 0));
}

TEST(LabelSmoothing, NoSmoothingIsNllOfTheTargets) {
  nn::LabelSmoothing<double> crit(5, 4, 0.0);
  const auto loss = crit(log_predictions(), kTargets);
  EXPECT_NEAR(loss.value()(), -(std::log(0.4) + std::log(0.2) + std::log(0.1) + std::log(0.2)), 1e-14);
}

TEST(LabelSmoothing, BadArgumentsThrow) {
  EXPECT_TRUE(throws_with<ValueError>([] { nn::LabelSmoothing<double>(2, 0, 0.1); }, {"LabelSmoothing", "size", "2"}));
  EXPECT_TRUE(throws_with<ValueError>([] { nn::LabelSmoothing<double>(5, 5, 0.1); },
                                      {"LabelSmoothing", "padding_idx 5", "[0, 5)"}));
  EXPECT_TRUE(throws_with<ValueError>([] { nn::LabelSmoothing<double>(5, 0, 1.5); }, {"LabelSmoothing", "1.5"}));
  nn::LabelSmoothing<double> crit(5, 0, 0.1);
  EXPECT_TRUE(throws_with<ShapeError>([&] { crit(Tensor<double>::zeros({4, 6}), kTargets); },
                                      {"LabelSmoothing", "[N, 5]", "[4,6]", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { crit(Tensor<double>::zeros({3, 5}), kTargets); },
                                      {"LabelSmoothing", "[3,5]", "target [4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { crit(Tensor<double>::zeros({2, 5}), IndexArray{1, 5}); },
                                      {"LabelSmoothing", "target 5", "position 1", "[0, 5)"}));
}

}  // namespace
}  // namespace tapegrad
