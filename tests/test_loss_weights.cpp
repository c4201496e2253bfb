// Class weights (weight=) of cross_entropy and nll_loss, and the elementwise weight of
// binary_cross_entropy and binary_cross_entropy_with_logits, against PyTorch 1.13's definitions
// written out with plain loops.
#include <cmath>
#include <limits>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {


// [N, C] or [N, C, L] logits with targets cycling through the classes, one in three ignored.
struct ClassCase {
  Shape logits;
  IndexArray targets;
};
std::vector<ClassCase> class_cases() {
  return {{{4}, IndexArray(Index{2})},
          {{4, 3}, IndexArray{2, kIgnore, 0, 1}},
          {{2, 3, 2, 2}, IndexArray{{{0, 2}, {kIgnore, 1}}, {{2, 2}, {0, kIgnore}}}}};
}

// PyTorch 1.13's weighted, smoothed cross-entropy from its definition, per kept target t of a lane
// (n, j) of C classes: (1 - s) w_t (-log p_t) + s / C * sum_c w_c (-log p_c), log p_c = x_c - lse;
// Mean divides the sum by the summed w_t of the kept targets.
xt::xarray<double> weighted_cross_entropy(const xt::xarray<double>& x, const IndexArray& t, const xt::xarray<double>& w,
                                          double s, Reduction r) {
  const std::size_t c_count = x.dimension() == 1 ? x.shape()[0] : x.shape()[1];
  const std::size_t n_count = x.dimension() == 1 ? 1 : x.shape()[0];
  const std::size_t lanes = t.size() / n_count;
  xt::xarray<double> losses = xt::zeros<double>(t.shape());
  double total = 0.0, weights = 0.0;
  for (std::size_t n = 0; n < n_count; ++n) {
    for (std::size_t j = 0; j < lanes; ++j) {
      const Index target = t.data()[n * lanes + j];
      if (target == kIgnore) continue;
      const auto at = [&](std::size_t c) { return x.data()[(n * c_count + c) * lanes + j]; };
      double z = 0.0;
      for (std::size_t c = 0; c < c_count; ++c) z += std::exp(at(c));
      double smooth = 0.0;
      for (std::size_t c = 0; c < c_count; ++c) smooth += w(c) * (std::log(z) - at(c));
      const auto tc = static_cast<std::size_t>(target);
      const double loss = (1.0 - s) * w(tc) * (std::log(z) - at(tc)) + s / double(c_count) * smooth;
      losses.data()[n * lanes + j] = loss;
      total += loss;
      weights += w(tc);
    }
  }
  if (r == Reduction::None) return losses;
  return xt::xarray<double>(r == Reduction::Sum ? total : total / weights);
}


// ---------------------------------------------------------------- cross_entropy

TEST(CrossEntropyWeight, KnownPyTorchValueWithSmoothingAndIgnoredTarget) {
  // PyTorch 1.13: F.cross_entropy(x, torch.tensor([3, -100, 1]), weight=torch.tensor([0.5, 2., -1., 3.]),
  // label_smoothing=0.2) and x.grad after backward, in float64.
  const Tensor<double> x(xt::xarray<double>{{0.5, -1.0, 2.0, 0.0}, {3.0, 1.0, -2.0, 0.25}, {-0.5, 0.5, 1.5, -1.5}}, true);
  const Tensor<double> w(xt::xarray<double>{0.5, 2.0, -1.0, 3.0});
  GradientTape tape;
  const auto loss = cross_entropy(x, IndexArray{3, kIgnore, 1}, {.weight = w, .label_smoothing = 0.2});
  EXPECT_NEAR(loss.item(), 1.867902770729493, 1e-14);
  tape.backward(loss);
  const xt::xarray<double> want = {{0.07818347249536436, -0.0014392584604068432, 0.3828024595152415, -0.45954667355019896},
                                   {0.0, 0.0, 0.0, 0.0},
                                   {0.02680767634084189, -0.2535377713971828, 0.2450287048591099, -0.01829860980276898}};
  EXPECT_LT(max_abs_diff(x.grad(), want), 1e-15);
}

TEST(CrossEntropyWeight, ForwardMatchesDefinitionOverShapesSmoothingAndReductions) {
  for (const ClassCase& k : class_cases()) {
    const std::size_t classes = k.logits.size() == 1 ? k.logits[0] : k.logits[1];
    const auto w = random_tensor({classes}, 31, false, -0.5, 2.0);
    const auto logits = random_tensor(k.logits, 32, false, -3.0, 3.0);
    for (double s : {0.0, 0.3, 1.0}) {
      for (Reduction r : kEveryReduction) {
        SCOPED_TRACE(format_shape(k.logits) + " s=" + std::to_string(s) + " r=" + std::to_string(int(r)));
        const auto got = cross_entropy(logits, k.targets, {.weight = w, .label_smoothing = s, .reduction = r});
        EXPECT_LT(max_abs_diff(got.value(), weighted_cross_entropy(logits.value(), k.targets, w.value(), s, r)), 1e-12);
      }
    }
  }
}

TEST(CrossEntropyWeight, GradcheckOverShapesSmoothingAndReductions) {
  for (const ClassCase& k : class_cases()) {
    const std::size_t classes = k.logits.size() == 1 ? k.logits[0] : k.logits[1];
    const auto w = random_tensor({classes}, 33, false, 0.2, 2.0);
    for (double s : {0.0, 0.3}) {
      for (Reduction r : kEveryReduction) {
        SCOPED_TRACE(format_shape(k.logits) + " s=" + std::to_string(s) + " r=" + std::to_string(int(r)));
        EXPECT_TRUE(passes_gradcheck(
            [&](const Inputs& x) { return cross_entropy(x[0], k.targets, {.weight = w, .label_smoothing = s, .reduction = r}); },
            {random_tensor(k.logits, 34, true, -2.0, 2.0)}));
      }
    }
  }
}

TEST(CrossEntropyWeight, UnitWeightsGiveTheUnweightedLossBitForBit) {
  const auto logits = random_tensor({5, 7}, 35, true, -3.0, 3.0);
  const IndexArray targets = {6, 0, kIgnore, 3, 3};
  const Tensor<double> ones(xt::xarray<double>(xt::ones<double>({7})));
  for (double s : {0.0, 0.1}) {
    const auto plain = cross_entropy(logits, targets, {.label_smoothing = s, .reduction = Reduction::None});
    const auto weighted = cross_entropy(logits, targets, {.weight = ones, .label_smoothing = s, .reduction = Reduction::None});
    EXPECT_LT(max_abs_diff(plain.value(), weighted.value()), 1e-15);
  }
}

TEST(CrossEntropyWeight, AllIgnoredOrZeroWeightMeanIsZeroWithZeroGradient) {
  // PyTorch gives NaN (0 / 0); tapegrad's rule for a Mean over nothing gives 0.
  const auto logits = random_tensor({2, 3}, 36);
  const Tensor<double> w(xt::xarray<double>{0.0, 1.0, 2.0});
  for (const IndexArray& targets : {IndexArray{kIgnore, kIgnore}, IndexArray{0, kIgnore}}) {
    logits.node()->clear_grad();
    GradientTape tape;
    const auto loss = cross_entropy(logits, targets, {.weight = w});
    EXPECT_EQ(loss.item(), 0.0);
    tape.backward(loss);
    EXPECT_EQ(logits.grad(), xt::xarray<double>(xt::zeros<double>({2, 3})));
  }
}

TEST(CrossEntropyWeight, BadWeightsThrowNamingOpAndShapes) {
  const auto logits = random_tensor({2, 3}, 37);
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(logits, IndexArray{0, 1}, {.weight = random_tensor({4}, 1, false)}); },
                                      {"cross_entropy", "weight [4]", "[3]", "logits [2,3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(logits, IndexArray{0, 1}, {.weight = random_tensor({1, 3}, 1, false)}); },
                                      {"cross_entropy", "weight [1,3]", "[3]"}));
  GradientTape tape;
  EXPECT_TRUE(throws_with<ValueError>([&] { cross_entropy(logits, IndexArray{0, 1}, {.weight = random_tensor({3}, 1, true)}); },
                                      {"cross_entropy", "weight [3]", "requires a gradient", "detach"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { nll_loss(logits, IndexArray{0, 1}, {.weight = random_tensor({3}, 1, true)}); },
                                      {"nll_loss", "weight [3]", "requires a gradient", "log_probs [2,3]"}));
  // Without recording nothing would differentiate it: accepted, as PyTorch under no_grad.
  NoGradGuard no_grad;
  EXPECT_NO_THROW(cross_entropy(logits, IndexArray{0, 1}, {.weight = random_tensor({3}, 1, true)}));
}

// ---------------------------------------------------------------- nll_loss

TEST(NllLossWeight, HandComputed) {
  const Tensor<double> lp(xt::xarray<double>{{-1.0, -2.0, -3.0}, {-0.5, -1.5, -2.5}, {-4.0, -5.0, -6.0}}, true);
  const Tensor<double> w(xt::xarray<double>{2.0, 0.5, 4.0});
  const IndexArray targets = {2, 0, kIgnore};
  // Losses -w_t lp_t: 4 * 3 = 12 and 2 * 0.5 = 1; Mean divides by w_2 + w_0 = 6.
  EXPECT_EQ(nll_loss(lp, targets, {.weight = w, .reduction = Reduction::None}).value(), (xt::xarray<double>{12.0, 1.0, 0.0}));
  EXPECT_DOUBLE_EQ(nll_loss(lp, targets, {.weight = w, .reduction = Reduction::Sum}).item(), 13.0);
  GradientTape tape;
  const auto mean = nll_loss(lp, targets, {.weight = w});
  EXPECT_DOUBLE_EQ(mean.item(), 13.0 / 6.0);
  tape.backward(mean);
  EXPECT_LT(max_abs_diff(lp.grad(), xt::xarray<double>{{0.0, 0.0, -4.0 / 6.0}, {-2.0 / 6.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}),
            1e-16);
}

TEST(NllLossWeight, NegativeWeightsAreAcceptedAsInPyTorch) {
  const Tensor<double> lp(xt::xarray<double>{{-1.0, -2.0}, {-0.5, -1.5}});
  const Tensor<double> w(xt::xarray<double>{-1.0, 3.0});
  // (-1 * 1 + 3 * 1.5) / (-1 + 3) = 1.75.
  EXPECT_DOUBLE_EQ(nll_loss(lp, IndexArray{0, 1}, {.weight = w}).item(), 1.75);
}

TEST(NllLossWeight, GradcheckOverShapesAndReductions) {
  for (const ClassCase& k : class_cases()) {
    const std::size_t classes = k.logits.size() == 1 ? k.logits[0] : k.logits[1];
    const auto w = random_tensor({classes}, 38, false, 0.2, 2.0);
    for (Reduction r : kEveryReduction) {
      SCOPED_TRACE(format_shape(k.logits) + " r=" + std::to_string(int(r)));
      EXPECT_TRUE(passes_gradcheck(
          [&](const Inputs& x) { return nll_loss(mul(x[0], x[0]), k.targets, {.weight = w, .reduction = r}); },
          {random_tensor(k.logits, 39)}));
    }
  }
}

// ---------------------------------------------------------------- binary cross-entropy

TEST(BinaryCrossEntropyWeight, RescalesEachElementBeforeTheMean) {
  const Tensor<double> p(xt::xarray<double>{{0.25, 0.5, 0.75}, {0.1, 0.9, 0.5}});
  const Tensor<double> t(xt::xarray<double>{{0.0, 1.0, 1.0}, {1.0, 0.0, 0.5}});
  const Tensor<double> w(xt::xarray<double>{2.0, -1.0, 0.5});  // broadcast along the rows
  xt::xarray<double> want = xt::zeros<double>({2, 3});
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      const double pv = p.value()(i, j), tv = t.value()(i, j);
      want(i, j) = -w.value()(j) * (tv * std::log(pv) + (1.0 - tv) * std::log(1.0 - pv));
    }
  }
  EXPECT_LT(max_abs_diff(binary_cross_entropy(p, t, Reduction::None, w).value(), want), 1e-15);
  EXPECT_NEAR(binary_cross_entropy(p, t, Reduction::Mean, w).item(), xt::sum(want)() / 6.0, 1e-15);
  EXPECT_LT(max_abs_diff(binary_cross_entropy_with_logits(log(div(p, rsub(p, 1.0))), t, Reduction::None, std::nullopt, w).value(), want),
            1e-14);
}

TEST(BinaryCrossEntropyWeight, GradcheckInEveryArgumentWithBroadcastWeights) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return binary_cross_entropy(x[0], x[1], Reduction::Mean, x[2]); },
                               {random_tensor({2, 3}, 40, true, 0.1, 0.9), random_tensor({2, 3}, 41, true, 0.0, 1.0),
                                random_tensor({2, 1}, 42, true, 0.5, 2.0)}));
  EXPECT_TRUE(passes_gradcheck(
      [](const Inputs& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::Sum, x[3], x[2]); },
      {random_tensor({2, 3}, 43, true, -3.0, 3.0), random_tensor({2, 3}, 44, true, 0.0, 1.0),
       random_tensor({3}, 45, true, -1.0, 2.0), random_tensor({3}, 46, true, 0.5, 2.0)}));
}

TEST(BinaryCrossEntropyWeight, WeightThatDoesNotBroadcastThrows) {
  const auto p = random_tensor({2, 3}, 47, false, 0.1, 0.9);
  EXPECT_TRUE(throws_with<ShapeError>([&] { binary_cross_entropy(p, p, Reduction::Mean, random_tensor({4}, 1)); },
                                      {"binary_cross_entropy", "weight [4]", "probs [2,3]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] { binary_cross_entropy_with_logits(p, p, Reduction::Mean, std::nullopt, random_tensor({2, 2, 3}, 1)); },
      {"binary_cross_entropy_with_logits", "weight [2,2,3]", "logits [2,3]"}));
}

}  // namespace
}  // namespace tapegrad
