// cross_entropy with class-probability targets (PyTorch's float target), against PyTorch 1.13's
// values and its definition written out with plain loops.
#include <cmath>
#include <limits>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {

// -sum_c w_c q_c log p_c per position of a lane (n, j) of C classes, q = (1 - s) target + s / C;
// Mean divides by the number of positions.
xt::xarray<double> soft_cross_entropy(const xt::xarray<double>& x, const xt::xarray<double>& target,
                                      const xt::xarray<double>& w, double s, Reduction r) {
  const bool classes_only = x.dimension() == 1;
  const std::size_t c_count = classes_only ? x.shape()[0] : x.shape()[1];
  const std::size_t n_count = classes_only ? 1 : x.shape()[0];
  const std::size_t lanes = x.size() / (n_count * c_count);
  Shape out_shape(x.shape().begin(), x.shape().end());
  out_shape.erase(out_shape.begin() + (classes_only ? 0 : 1));
  xt::xarray<double> losses = xt::zeros<double>(out_shape);
  double total = 0.0;
  for (std::size_t n = 0; n < n_count; ++n) {
    for (std::size_t j = 0; j < lanes; ++j) {
      const auto at = [&](const xt::xarray<double>& a, std::size_t c) { return a.data()[(n * c_count + c) * lanes + j]; };
      double z = 0.0;
      for (std::size_t c = 0; c < c_count; ++c) z += std::exp(at(x, c));
      double loss = 0.0;
      for (std::size_t c = 0; c < c_count; ++c) {
        const double q = (1.0 - s) * at(target, c) + s / double(c_count);
        loss -= w(c) * q * (at(x, c) - std::log(z));
      }
      losses.data()[n * lanes + j] = loss;
      total += loss;
    }
  }
  if (r == Reduction::None) return losses;
  return xt::xarray<double>(r == Reduction::Sum ? total : total / double(n_count * lanes));
}

const std::vector<Shape> kProbabilityShapes = {{4}, {3, 4}, {2, 3, 2, 2}};

TEST(CrossEntropyProbabilities, KnownPyTorchValuesAndGradientsOfEveryArgument) {
  // PyTorch 1.13, float64: l = F.cross_entropy(x, q, weight=w, label_smoothing=0.1); l.backward().
  const Tensor<double> x(xt::xarray<double>{{0.5, -1.0, 2.0}, {3.0, 1.0, -2.0}}, true);
  const Tensor<double> q(xt::xarray<double>{{0.2, 0.3, 0.5}, {1.0, 0.0, 0.0}}, true);
  const Tensor<double> w(xt::xarray<double>{0.5, 2.0, -1.0}, true);
  GradientTape tape;
  const auto loss = cross_entropy(x, q, {.weight = w, .label_smoothing = 0.1});
  EXPECT_NEAR(loss.item(), 1.0342954408808003, 1e-14);
  tape.backward(loss);
  EXPECT_LT(max_abs_diff(x.grad(), xt::xarray<double>{{-0.03317493823722911, -0.2988353874072043, 0.3320103256444334},
                                                      {-0.01443318456756143, -0.0037084196995809393, 0.018141604267142362}}),
            1e-15);
  EXPECT_LT(max_abs_diff(q.grad(), xt::xarray<double>{{0.39179504174786034, 2.9171801669914417, -0.10859008349572066},
                                                      {0.029890177588704502, 1.919560710354818, -2.309780355177409}}),
            1e-14);
  EXPECT_LT(max_abs_diff(w.grad(), xt::xarray<double>{0.24773431404963203, 0.5271463005551285, 0.14386431725427254}), 1e-15);
}

TEST(CrossEntropyProbabilities, ForwardMatchesDefinitionOverShapesSmoothingWeightsAndReductions) {
  for (const Shape& shape : kProbabilityShapes) {
    const std::size_t classes = shape.size() == 1 ? shape[0] : shape[1];
    const auto x = random_tensor(shape, 51, false, -3.0, 3.0);
    const auto target = random_tensor(shape, 52, false, 0.0, 1.0);
    const auto w = random_tensor({classes}, 53, false, -0.5, 2.0);
    const xt::xarray<double> ones = xt::ones<double>({classes});
    for (double s : {0.0, 0.3}) {
      for (Reduction r : kEveryReduction) {
        SCOPED_TRACE(format_shape(shape) + " s=" + std::to_string(s) + " r=" + std::to_string(int(r)));
        EXPECT_LT(max_abs_diff(cross_entropy(x, target, {.label_smoothing = s, .reduction = r}).value(),
                               soft_cross_entropy(x.value(), target.value(), ones, s, r)),
                  1e-12);
        EXPECT_LT(max_abs_diff(cross_entropy(x, target, {.weight = w, .label_smoothing = s, .reduction = r}).value(),
                               soft_cross_entropy(x.value(), target.value(), w.value(), s, r)),
                  1e-12);
      }
    }
  }
}

TEST(CrossEntropyProbabilities, OneHotTargetsGiveTheClassIndexLoss) {
  const auto x = random_tensor({3, 4}, 54, false, -2.0, 2.0);
  const Tensor<double> one_hot(xt::xarray<double>{{0, 0, 1, 0}, {1, 0, 0, 0}, {0, 0, 0, 1}});
  EXPECT_LT(max_abs_diff(cross_entropy(x, one_hot).value(), cross_entropy(x, IndexArray{2, 0, 3}).value()), 1e-15);
}

TEST(CrossEntropyProbabilities, GradcheckInLogitsTargetAndWeight) {
  for (const Shape& shape : kProbabilityShapes) {
    const std::size_t classes = shape.size() == 1 ? shape[0] : shape[1];
    for (Reduction r : kEveryReduction) {
      SCOPED_TRACE(format_shape(shape) + " r=" + std::to_string(int(r)));
      EXPECT_TRUE(passes_gradcheck(
          [r](const Inputs& x) { return cross_entropy(x[0], x[1], {.weight = x[2], .label_smoothing = 0.2, .reduction = r}); },
          {random_tensor(shape, 55, true, -2.0, 2.0), random_tensor(shape, 56, true, 0.0, 1.0),
           random_tensor({classes}, 57, true, 0.2, 2.0)}));
    }
  }
}

TEST(CrossEntropyProbabilities, EmptyBatchMeanIsZero) {
  // PyTorch gives NaN; tapegrad's rule for a Mean over nothing gives 0.
  const auto x = random_tensor({0, 3}, 58);
  EXPECT_EQ(cross_entropy(x, Tensor<double>::zeros({0, 3})).item(), 0.0);
}

TEST(CrossEntropyProbabilities, BadInputsThrowNamingOpAndShapes) {
  const auto x = random_tensor({2, 3}, 59);
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(x, random_tensor({2, 2}, 1)); },
                                      {"cross_entropy", "target probabilities [2,2]", "logits [2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { cross_entropy(x, random_tensor({2, 3}, 1), {.ignore_index = 0}); },
                                      {"cross_entropy", "ignore_index 0", "probabilities", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { cross_entropy(x, random_tensor({2, 3}, 1), {.label_smoothing = std::numeric_limits<double>::quiet_NaN()}); },
      {"cross_entropy", "label_smoothing", "[2,3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(x, random_tensor({2, 3}, 1), {.weight = random_tensor({2}, 1)}); },
                                      {"cross_entropy", "weight [2]", "[3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(random_tensor({}, 1), random_tensor({}, 1)); },
                                      {"cross_entropy", "no class axis"}));
}

}  // namespace
}  // namespace tapegrad
