// binary_cross_entropy and binary_cross_entropy_with_logits (autograd/ops/binary_cross_entropy.h):
// values and gradients against numbers worked by hand (and checked with PyTorch 1.13), gradcheck,
// bad inputs.
#include <cmath>
#include <limits>

#include "autograd/ops/binary_cross_entropy.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using A = xt::xarray<double>;

constexpr double inf = std::numeric_limits<double>::infinity();

Tensor<double> of(A values, bool requires_grad = false) { return Tensor<double>(std::move(values), requires_grad); }

// Values in (0.1, 0.9): gradcheck's steps stay inside [0, 1].
Tensor<double> probabilities(const Shape& shape, std::uint64_t seed) { return random_tensor(shape, seed, true, 0.1, 0.9); }

TEST(BinaryCrossEntropy, ValuesClampLogAtMinus100) {
  const auto p = of({0.3, 1.0, 0.5, 0.0});
  const auto t = of({0.2, 0.5, 1.0, 0.0});
  // -(t log p + (1 - t) log(1 - p)); p = 1 with t = 0.5: 0.5 * 100 from the clamped log(0).
  const A expected = {-(0.2 * std::log(0.3) + 0.8 * std::log(0.7)), 50.0, std::log(2.0), 0.0};
  EXPECT_TRUE(xt::allclose(binary_cross_entropy(p, t, Reduction::None).value(), expected, 1e-15, 0));
  EXPECT_NEAR(binary_cross_entropy(p, t).value()(), xt::sum(expected)() / 4, 1e-14);
  EXPECT_NEAR(binary_cross_entropy(p, t, Reduction::Sum).value()(), xt::sum(expected)(), 1e-13);
}

TEST(BinaryCrossEntropy, GradientsArePyTorchs) {
  const auto p = of({0.3, 1.0, 0.5, 0.0}, true);
  const auto t = of({0.2, 0.5, 1.0, 0.0}, true);
  GradientTape tape;
  const auto grads = tape.gradient(binary_cross_entropy(p, t, Reduction::Sum), {p, t});
  // d/dp = (p - t) / max(p (1 - p), 1e-12): 0 at p = t = 0, 5e11 at p = 1.
  EXPECT_TRUE(xt::allclose(grads[0].value(), A{0.1 / 0.21, 0.5 / 1e-12, -2.0, 0.0}, 1e-14, 0));
  // d/dt = log(1 - p) - log(p), unclamped.
  EXPECT_TRUE(xt::allclose(grads[1].value(), A{std::log(0.7) - std::log(0.3), -inf, 0.0, inf}, 1e-14, 0));
}

TEST(BinaryCrossEntropy, Gradcheck) {
  for (const Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    EXPECT_TRUE(passes_gradcheck([r](const Inputs& x) { return binary_cross_entropy(x[0], x[1], r); },
                                 {probabilities({2, 3}, 1), probabilities({2, 3}, 2)}));
  }
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return binary_cross_entropy(x[0], x[1]); },
                               {probabilities({}, 3), probabilities({}, 4)}));
}

TEST(BinaryCrossEntropy, BadInputsThrow) {
  EXPECT_TRUE(throws_with<ValueError>([] { binary_cross_entropy(of({0.5, -0.5}), of({0.0, 0.0})); },
                                      {"binary_cross_entropy", "[0, 1]", "-0.5", "position [1]", "[2]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { binary_cross_entropy(of({std::nan("")}), of({0.0})); },
                                      {"binary_cross_entropy", "nan"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { binary_cross_entropy(of({0.5, 0.5}), of({0.0})); },
                                      {"binary_cross_entropy", "target [1]", "probs [2]"}));
}

TEST(BinaryCrossEntropyWithLogits, StableValuesAndGradients) {
  const auto x = of({-1000.0, 0.0, 2.0}, true);
  const auto t = of({1.0, 0.5, 0.0}, true);
  // (1 - t) x + softplus(-x): softplus(1000) = 1000 exactly, no overflow.
  const double sp_neg2 = std::log1p(std::exp(-2.0));
  GradientTape tape;
  const auto loss = binary_cross_entropy_with_logits(x, t, Reduction::None);
  EXPECT_TRUE(xt::allclose(loss.value(), A{1000.0, std::log(2.0), 2.0 + sp_neg2}, 1e-15, 0));
  const auto grads = tape.gradient(sum(loss), {x, t});
  // d/dx = sigmoid(x) - t (-0.5 at x = 0, where a max / abs composition would give 0); d/dt = -x.
  EXPECT_TRUE(xt::allclose(grads[0].value(), A{-1.0, 0.0, 1.0 / (1.0 + std::exp(-2.0))}, 1e-15, 0));
  EXPECT_TRUE(xt::allclose(grads[1].value(), A{1000.0, 0.0, -2.0}, 1e-15, 0));
}

TEST(BinaryCrossEntropyWithLogits, PosWeightScalesThePositiveTerm) {
  const auto x = of({-1000.0, 0.0, 2.0}, true);
  const auto t = of({1.0, 0.5, 0.0}, true);
  const auto w = of({2.0, 3.0, 0.5}, true);
  GradientTape tape;
  // weight 1 + (w - 1) t = [2, 2, 1] on softplus(-x).
  const auto loss = binary_cross_entropy_with_logits(x, t, Reduction::None, w);
  const double sp_neg2 = std::log1p(std::exp(-2.0));
  EXPECT_TRUE(xt::allclose(loss.value(), A{2000.0, 2 * std::log(2.0), 2.0 + sp_neg2}, 1e-15, 0));
  const auto grads = tape.gradient(sum(loss), {x, t, w});
  EXPECT_TRUE(xt::allclose(grads[0].value(), A{-2.0, -0.5, 1.0 / (1.0 + std::exp(-2.0))}, 1e-15, 0));
  EXPECT_TRUE(xt::allclose(grads[1].value(), A{2000.0, 2 * std::log(2.0), -2.0 - 0.5 * sp_neg2}, 1e-15, 0));
  // d/dw = t softplus(-x) (PyTorch 1.13 has no gradient for pos_weight).
  EXPECT_TRUE(xt::allclose(grads[2].value(), A{1000.0, 0.5 * std::log(2.0), 0.0}, 1e-15, 0));
}

TEST(BinaryCrossEntropyWithLogits, Gradcheck) {
  for (const Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    EXPECT_TRUE(passes_gradcheck([r](const Inputs& x) { return binary_cross_entropy_with_logits(x[0], x[1], r); },
                                 {random_tensor({2, 3}, 1), probabilities({2, 3}, 2)}));
  }
  EXPECT_TRUE(passes_gradcheck(
      [](const Inputs& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::Mean, x[2]); },
      {random_tensor({2, 3}, 3), probabilities({2, 3}, 4), probabilities({3}, 5)}));
}

TEST(BinaryCrossEntropyWithLogits, BadInputsThrow) {
  EXPECT_TRUE(throws_with<ShapeError>([] { binary_cross_entropy_with_logits(of({0.0, 0.0}), of({0.0})); },
                                      {"binary_cross_entropy_with_logits", "target [1]", "logits [2]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] { binary_cross_entropy_with_logits(of({0.0, 0.0}), of({0.0, 0.0}), Reduction::Mean, of({1.0, 1.0, 1.0})); },
      {"binary_cross_entropy_with_logits", "pos_weight [3]", "logits [2]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] { binary_cross_entropy_with_logits(of({0.0}), of({0.0}), Reduction::BatchMean); },
      {"binary_cross_entropy_with_logits", "BatchMean"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// binary_cross_entropy on probabilities drawn from [0.1, 0.9] (finite differences stay inside
// [0, 1]); binary_cross_entropy_with_logits on logits either side of 0, with and without
// pos_weight; the weight of each, broadcast and differentiable. Both have a parallel forward
// kernel, so one sample of each runs at scale.
TAPEGRAD_OP_SPEC(binary_cross_entropy) {
  OpSpec s("binary_cross_entropy", "binary_cross_entropy");
  s.remark = "weight";
  s.samples = {
      OpCase("binary_cross_entropy_mean", [](const auto& x) { return binary_cross_entropy(x[0], x[1]); },
             [] { return V{leaf({2, 3}, 501, 0.1, 0.9), leaf({2, 3}, 502, 0.0, 1.0)}; })
          .at_scale([] { return V{leaf({300, 200}, 503, 0.1, 0.9), leaf({300, 200}, 504, 0.0, 1.0)}; }),
      {"binary_cross_entropy_none_0d", [](const auto& x) { return binary_cross_entropy(x[0], x[1], Reduction::None); },
       [] { return V{leaf({}, 505, 0.1, 0.9), leaf({}, 506, 0.0, 1.0)}; }},
      // binary cross-entropy's weight, broadcast, differentiable.
      {"binary_cross_entropy_weight_mean",
       [](const auto& x) { return binary_cross_entropy(x[0], x[1], Reduction::Mean, x[2]); },
       [] { return V{leaf({2, 3}, 617, 0.1, 0.9), leaf({2, 3}, 618, 0.0, 1.0), leaf({2, 1}, 619, 0.5, 2.0)}; }},
  };
  s.errors = {
      error_input<ValueError>("binary_cross_entropy_prob_above_one", "`binary_cross_entropy`", "a prob of 1.5 (NaN too)",
                  [] { return binary_cross_entropy(Tensor<double>(xt::xarray<double>{0.5, 1.5}), bad_inputs::zeros({2})); },
                  {"binary_cross_entropy", "[0, 1]", "1.5", "position [1]", "[2]"}),
      error_input<ShapeError>("binary_cross_entropy_shape_mismatch", "`binary_cross_entropy`", "target [3] for probs [2,3]",
                  [] { return binary_cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::zeros({3})); },
                  {"binary_cross_entropy", "target [3]", "probs [2,3]"}),
      error_input<ValueError>("binary_cross_entropy_batchmean", "`binary_cross_entropy`", "Reduction::BatchMean",
                  [] { return binary_cross_entropy(bad_inputs::zeros({2}), bad_inputs::zeros({2}), Reduction::BatchMean); },
                  {"binary_cross_entropy", "BatchMean", "[2]"}),
      error_input<ShapeError>("binary_cross_entropy_weight_does_not_broadcast", "`binary_cross_entropy`", "weight [2] for probs [2,3]",
                  [] { return binary_cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 3}), Reduction::Mean, std::optional<Tensor<double>>(bad_inputs::zeros({2}))); },
                  {"binary_cross_entropy", "weight [2]", "probs [2,3]"}),
  };
  s.pytorch = {
      {"nn.functional.binary_cross_entropy",
       [](Call& c) -> Outputs {
         const T probs = c.tensor(c.input());
         return {binary_cross_entropy(probs, c.tensor(c.arg(0)), reduction_mode(c), optional_weight(c))};
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(binary_cross_entropy_with_logits) {
  OpSpec s("binary_cross_entropy_with_logits", "binary_cross_entropy");
  s.remark = "weight, pos_weight";
  s.samples = {
      OpCase("binary_cross_entropy_with_logits_sum",
             [](const auto& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::Sum); },
             [] { return V{leaf({2, 3}, 507, -3.0, 3.0), leaf({2, 3}, 508, 0.0, 1.0)}; })
          .at_scale([] { return V{leaf({300, 200}, 509, -3.0, 3.0), leaf({300, 200}, 510, 0.0, 1.0)}; }),
      {"binary_cross_entropy_with_logits_pos_weight_none",
       [](const auto& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::None, x[2]); },
       [] { return V{leaf({2, 3}, 511, -3.0, 3.0), leaf({2, 3}, 512, 0.0, 1.0), leaf({3}, 513, 0.5, 2.0)}; }},
      {"bce_with_logits_weight_pos_weight_none",
       [](const auto& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::None, x[2], x[3]); },
       [] {
         return V{leaf({2, 3}, 620, -3.0, 3.0), leaf({2, 3}, 621, 0.0, 1.0), leaf({3}, 622, 0.5, 2.0),
                  leaf({2, 3}, 623, -1.0, 2.0)};
       }},
  };
  s.errors = {
      error_input<ShapeError>("bce_with_logits_shape_mismatch", "`binary_cross_entropy_with_logits`", "target [2,1] for logits [2,3] (PyTorch does not broadcast either)",
                  [] { return binary_cross_entropy_with_logits(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 1})); },
                  {"binary_cross_entropy_with_logits", "target [2,1]", "logits [2,3]"}),
      error_input<ShapeError>("bce_with_logits_pos_weight_does_not_broadcast", "`binary_cross_entropy_with_logits`", "pos_weight [2] for logits [2,3]",
                  [] { return binary_cross_entropy_with_logits(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 3}), Reduction::Mean,
                                                std::optional<Tensor<double>>(bad_inputs::zeros({2}))); },
                  {"binary_cross_entropy_with_logits", "pos_weight [2]", "[2,3]"}),
      error_input<ShapeError>("bce_with_logits_weight_does_not_broadcast", "`binary_cross_entropy_with_logits`", "weight [2,2,3] for logits [2,3]",
                  [] { return binary_cross_entropy_with_logits(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 3}), Reduction::Mean, std::nullopt,
                                                std::optional<Tensor<double>>(bad_inputs::zeros({2, 2, 3}))); },
                  {"binary_cross_entropy_with_logits", "weight [2,2,3]", "logits [2,3]"}),
  };
  s.pytorch = {
      {"nn.functional.binary_cross_entropy_with_logits",
       [](Call& c) -> Outputs {
         const T logits = c.tensor(c.input());
         const T target = c.tensor(c.arg(0));
         std::optional<T> pos_weight;
         if (const Value* v = c.kwarg("pos_weight"); v && v->kind != Value::Kind::none) pos_weight = c.tensor(*v);
         return {binary_cross_entropy_with_logits(logits, target, reduction_mode(c), pos_weight, optional_weight(c))};
       }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
