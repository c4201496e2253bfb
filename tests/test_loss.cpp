#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <tuple>
#include <type_traits>

#include <xtensor/xview.hpp>

#include "autograd/kernels/parallel.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {


// Logits shapes in PyTorch's class-axis convention: [C], [N, C], size-1 axes, [N, C, L], [N, C, d1, d2].
// {3, 37}: rows long enough for the xsimd passes of the last-axis kernel (batches and a tail).
const std::vector<Shape> kLogitShapes = {{4}, {3, 4}, {1, 5}, {3, 1}, {2, 3, 4}, {2, 3, 2, 2}, {3, 37}};
const std::vector<Reduction> kClassReductions = {Reduction::None, Reduction::Sum, Reduction::Mean};
const std::vector<Reduction> kAllReductions = {Reduction::None, Reduction::Sum, Reduction::Mean, Reduction::BatchMean};

const char* name_of(Reduction r) {
  switch (r) {
    case Reduction::None: return "None";
    case Reduction::Sum: return "Sum";
    case Reduction::Mean: return "Mean";
    case Reduction::BatchMean: return "BatchMean";
  }
  return "?";
}

// N, C and L (the product of the axes after C) of a logits shape, written out independently of the op.
struct Dims {
  std::size_t n = 1, c = 1, l = 1;
};
Dims dims_of(const Shape& logits) {
  Dims d;
  if (logits.size() == 1) {
    d.c = logits[0];
    return d;
  }
  d.n = logits[0];
  d.c = logits[1];
  for (std::size_t i = 2; i < logits.size(); ++i) d.l *= logits[i];
  return d;
}

Shape target_shape_of(const Shape& logits) {
  if (logits.size() == 1) return {};
  Shape t = logits;
  t.erase(t.begin() + 1);
  return t;
}

// Targets cycling through the classes, with every third one set to `ignore` when `with_ignored`.
IndexArray make_targets(const Shape& logits, bool with_ignored, Index ignore = kIgnore) {
  const Dims d = dims_of(logits);
  IndexArray t = IndexArray::from_shape(target_shape_of(logits));
  for (std::size_t r = 0; r < t.size(); ++r) {
    t.data()[r] = with_ignored && r % 3 == 1 ? ignore : static_cast<Index>((2 * r + 1) % d.c);
  }
  return t;
}

// Per-target loss from the definition, with plain loops:
//   log p_c = x_c - log sum_k exp(x_k);  loss = (1 - s)(-log p_t) + s * mean_c(-log p_c); 0 if ignored.
xt::xarray<double> naive_cross_entropy(const xt::xarray<double>& x, const IndexArray& t, Index ignore, double s) {
  const Shape shape(x.shape().begin(), x.shape().end());
  const Dims d = dims_of(shape);
  xt::xarray<double> out = xt::zeros<double>(t.shape());
  for (std::size_t n = 0; n < d.n; ++n) {
    for (std::size_t j = 0; j < d.l; ++j) {
      const Index target = t.data()[n * d.l + j];
      if (target == ignore) continue;
      auto at = [&](std::size_t c) { return x.data()[(n * d.c + c) * d.l + j]; };
      double z = 0.0;
      for (std::size_t c = 0; c < d.c; ++c) z += std::exp(at(c));
      double smooth = 0.0;
      for (std::size_t c = 0; c < d.c; ++c) smooth += -(at(c) - std::log(z));
      const double nll = -(at(static_cast<std::size_t>(target)) - std::log(z));
      out.data()[n * d.l + j] = (1.0 - s) * nll + s * smooth / static_cast<double>(d.c);
    }
  }
  return out;
}

xt::xarray<double> naive_nll(const xt::xarray<double>& lp, const IndexArray& t, Index ignore) {
  const Dims d = dims_of(Shape(lp.shape().begin(), lp.shape().end()));
  xt::xarray<double> out = xt::zeros<double>(t.shape());
  for (std::size_t n = 0; n < d.n; ++n) {
    for (std::size_t j = 0; j < d.l; ++j) {
      const Index target = t.data()[n * d.l + j];
      if (target != ignore) out.data()[n * d.l + j] = -lp.data()[(n * d.c + static_cast<std::size_t>(target)) * d.l + j];
    }
  }
  return out;
}

// Reduces per-target losses as PyTorch does; `counted` is the Mean's divisor.
xt::xarray<double> naive_reduce(const xt::xarray<double>& losses, Reduction r, double counted) {
  if (r == Reduction::None) return losses;
  double total = 0.0;
  for (std::size_t i = 0; i < losses.size(); ++i) total += losses.data()[i];
  return xt::xarray<double>(r == Reduction::Mean ? total / counted : total);
}

double count_kept(const IndexArray& t, Index ignore) {
  double kept = 0.0;
  for (std::size_t i = 0; i < t.size(); ++i) kept += t.data()[i] != ignore ? 1.0 : 0.0;
  return kept;
}

// ---------------------------------------------------------------- cross_entropy

TEST(CrossEntropy, KnownPyTorchValues) {
  const Tensor<double> logits(xt::xarray<double>{{1.0, 2.0, 3.0}, {1.0, 0.0, -1.0}});
  const IndexArray targets = {2, 0};
  EXPECT_NEAR(cross_entropy(logits, targets).item(), 0.4076059644443806, 1e-14);
  // Each row: (1 - s)(lse - x_t) + s(lse - mean x) = 0.4076... + s * (x_t - mean x) = 0.4076... + 0.1.
  EXPECT_NEAR(cross_entropy(logits, targets, {.label_smoothing = 0.1}).item(), 0.5076059644443806, 1e-14);
}

TEST(CrossEntropy, LabelSmoothingWithIgnoredTargetByHand) {
  const xt::xarray<double> x = {{0.5, -1.0, 2.0, 0.0}, {3.0, 1.0, -2.0, 0.25}, {-0.5, 0.5, 1.5, -1.5}};
  const IndexArray targets = {3, kIgnore, 1};
  const double s = 0.2;
  // Plain loops over the two kept rows: (1 - s) * nll + s * mean_c(-log p_c), divided by 2 kept targets.
  double total = 0.0;
  for (std::size_t i : {0u, 2u}) {
    double z = 0.0;
    for (std::size_t c = 0; c < 4; ++c) z += std::exp(x(i, c));
    double smooth = 0.0;
    for (std::size_t c = 0; c < 4; ++c) smooth += std::log(z) - x(i, c);
    total += (1 - s) * (std::log(z) - x(i, static_cast<std::size_t>(targets(i)))) + s * smooth / 4.0;
  }
  const Tensor<double> logits(x);
  EXPECT_NEAR(cross_entropy(logits, targets, {.label_smoothing = s}).item(), total / 2.0, 1e-12);
  EXPECT_NEAR(cross_entropy(logits, targets, {.label_smoothing = s, .reduction = Reduction::Sum}).item(), total, 1e-12);
  const auto none = cross_entropy(logits, targets, {.label_smoothing = s, .reduction = Reduction::None});
  EXPECT_EQ(none.value()(1), 0.0);  // the ignored target's loss
}

TEST(CrossEntropy, ForwardMatchesNaiveReferenceOverShapes) {
  for (const Shape& shape : kLogitShapes) {
    for (double s : {0.0, 0.1, 1.0}) {
      for (Reduction r : kClassReductions) {
        SCOPED_TRACE(format_shape(shape) + " s=" + std::to_string(s) + " " + name_of(r));
        const auto logits = random_tensor(shape, 11, false, -3.0, 3.0);
        const IndexArray targets = make_targets(shape, shape.size() > 1);
        const auto expected = naive_reduce(naive_cross_entropy(logits.value(), targets, kIgnore, s), r,
                                           count_kept(targets, kIgnore));
        const auto got = cross_entropy(logits, targets, {.label_smoothing = s, .reduction = r});
        EXPECT_LT(max_abs_diff(got.value(), expected), 1e-12);
      }
    }
  }
}

TEST(CrossEntropy, IgnoreIndexInsideTheClassRange) {
  // ignore_index may be a real class (e.g. a padding token 0): those targets are dropped.
  const Shape shape = {4, 3};
  const auto logits = random_tensor(shape, 12, false);
  const IndexArray targets = {0, 2, 0, 1};
  const auto expected = naive_reduce(naive_cross_entropy(logits.value(), targets, 0, 0.0), Reduction::Mean, 2.0);
  EXPECT_LT(max_abs_diff(cross_entropy(logits, targets, {.ignore_index = 0}).value(), expected), 1e-12);
}

TEST(CrossEntropy, StableForLargeLogits) {
  const Tensor<double> logits(xt::xarray<double>{{1000.0, 0.0}, {-1000.0, 0.0}});
  EXPECT_NEAR(cross_entropy(logits, IndexArray{0, 0}, {.reduction = Reduction::Sum}).item(), 1000.0, 1e-9);
}

TEST(CrossEntropy, AllTargetsIgnoredMeanIsZeroWithZeroGradient) {
  for (const Shape& shape : std::vector<Shape>{{2, 3}, {0, 3}}) {
    SCOPED_TRACE(format_shape(shape));
    const auto logits = random_tensor(shape, 13);
    IndexArray targets = IndexArray::from_shape({shape[0]});
    targets.fill(kIgnore);
    GradientTape tape;
    const auto loss = cross_entropy(logits, targets);
    EXPECT_EQ(loss.item(), 0.0);
    tape.backward(loss);
    EXPECT_EQ(logits.grad(), xt::xarray<double>(xt::zeros<double>(shape)));
  }
}

TEST(CrossEntropy, GradcheckOverShapesReductionsSmoothingAndIgnoredTargets) {
  for (const Shape& shape : kLogitShapes) {
    for (double s : {0.0, 0.1}) {
      for (Reduction r : kClassReductions) {
        SCOPED_TRACE(format_shape(shape) + " s=" + std::to_string(s) + " " + name_of(r));
        const IndexArray targets = make_targets(shape, shape.size() > 1);
        EXPECT_TRUE(passes_gradcheck(
            [&](const Inputs& x) { return cross_entropy(x[0], targets, {.label_smoothing = s, .reduction = r}); },
            {random_tensor(shape, 14, true, -2.0, 2.0)}));
      }
    }
  }
}

TEST(CrossEntropy, SameBitsAtOneAndTwoThreads) {
  const testing_support::ThreadCountTest thread_count_test;
  const Shape shape = {512, 1000};
  Generator gen(15);
  const auto logits = Tensor<float>::randn(shape, gen, 0.0f, 3.0f, true);
  IndexArray targets = IndexArray::from_shape({512});
  for (std::size_t i = 0; i < 512; ++i) targets(i) = i % 7 == 3 ? kIgnore : gen.randint(0, 1000);

  auto run = [&](std::size_t threads) {
    set_num_threads(threads);
    logits.node()->clear_grad();
    GradientTape tape;
    const auto loss = cross_entropy(logits, targets, {.label_smoothing = 0.1});
    tape.backward(loss);
    return std::make_pair(loss.item(), xt::xarray<float>(logits.grad()));
  };
  const auto [loss1, grad1] = run(1);
  const auto [loss2, grad2] = run(2);
  EXPECT_EQ(loss1, loss2);
  EXPECT_TRUE(grad1 == grad2);  // exact, element by element
  EXPECT_TRUE(std::isfinite(loss1));
}

// ---------------------------------------------------------------- cross_entropy with masked or huge logits

// Rows of 3 classes holding -inf (masked), the lowest finite value, logits near 1e7 (where
// lse - x_t loses everything in float) and a row with one finite logit; their targets.
template <class T>
xt::xarray<T> masked_rows() {
  const T inf = std::numeric_limits<T>::infinity(), low = std::numeric_limits<T>::lowest();
  return {{T(1), -inf, T(2)},
          {T(1), -inf, T(2)},
          {T(1), low, T(2)},
          {T(1e7), T(1e7 + 1), T(1e7 - 1)},
          {-inf, T(0.5), -inf}};
}
const IndexArray kMaskedTargets = {0, 1, 0, 0, 1};

// PyTorch 1.13 on masked_rows: x = torch.tensor(rows, dtype=..., requires_grad=True);
// l = F.cross_entropy(x, torch.tensor([0, 1, 0, 0, 1]), label_smoothing=s, reduction='none');
// l.sum().backward(); printed with repr(): the losses and x.grad, per dtype and smoothing.
struct PyTorchRows {
  xt::xarray<double> loss, grad;
};
template <class T>
PyTorchRows pytorch_masked_rows(double s) {
  if constexpr (std::is_same_v<T, float>) {
    if (s == 0.0) {
      return {{1.31326162815094, kInf, 1.31326162815094, 1.4076058864593506, -0.0},
              {{-0.7310585975646973, 0.0, 0.7310585975646973},
               {0.2689414322376251, -1.0, 0.7310585975646973},
               {-0.7310585975646973, 0.0, 0.7310585975646973},
               {-0.7552714943885803, 0.665241003036499, 0.09003058075904846},
               {0.0, 0.0, 0.0}}};
    }
    return {{kInf, kInf, 1.1342744887950962e+37, 1.407605767250061, kInf},
            {{-0.6643918752670288, -0.03333333507180214, 0.697725236415863},
             {0.23560810089111328, -0.9333333373069763, 0.697725236415863},
             {-0.6643918752670288, -0.03333333507180214, 0.697725236415863},
             {-0.6886048316955566, 0.6319076418876648, 0.05669724568724632},
             {-0.03333333507180214, 0.06666666269302368, -0.03333333507180214}}};
  } else {
    if (s == 0.0) {
      return {{1.3132616875182228, kInf, 1.3132616875182228, 1.4076059644443804, -0.0},
              {{-0.7310585786300049, 0.0, 0.7310585786300049},
               {0.2689414213699951, -1.0, 0.7310585786300049},
               {-0.7310585786300049, 0.0, 0.7310585786300049},
               {-0.7552715289452023, 0.6652409557748218, 0.09003057317038043},
               {0.0, 0.0, 0.0}}};
    }
    return {{kInf, kInf, 5.992310449541052e+306, 1.4076059644443804, kInf},
            {{-0.6643919119633382, -0.03333333333333333, 0.6977252452966716},
             {0.23560808803666178, -0.9333333333333333, 0.6977252452966716},
             {-0.6643919119633382, -0.03333333333333333, 0.6977252452966716},
             {-0.6886048622785357, 0.6319076224414885, 0.0566972398370471},
             {-0.03333333333333333, 0.06666666666666665, -0.03333333333333333}}};
  }
}

// Losses and gradients of cross_entropy(rows, kMaskedTargets) with reduction None, through the
// contiguous last-axis kernel ([5, 3]) or the strided lane kernel (the rows as lanes of [1, 3, 5]).
template <class T>
PyTorchRows ours_on_masked_rows(double s, bool strided) {
  const xt::xarray<T> rows = masked_rows<T>();
  xt::xarray<T> x = rows;
  IndexArray targets = kMaskedTargets;
  if (strided) {
    x = xt::xarray<T>::from_shape({1, 3, 5});
    for (std::size_t r = 0; r < 5; ++r)
      for (std::size_t c = 0; c < 3; ++c) x(0, c, r) = rows(r, c);
    targets.reshape({1, 5});
  }
  const Tensor<T> logits(x, true);
  GradientTape tape;
  const auto loss = cross_entropy(logits, targets, {.label_smoothing = s, .reduction = Reduction::None});
  tape.backward(loss, xt::xarray<T>(xt::ones<T>(loss.shape())));
  PyTorchRows out{xt::zeros<double>({5}), xt::zeros<double>({5, 3})};
  for (std::size_t r = 0; r < 5; ++r) {
    out.loss(r) = loss.value().data()[r];
    for (std::size_t c = 0; c < 3; ++c) out.grad(r, c) = strided ? logits.grad()(0, c, r) : logits.grad()(r, c);
  }
  return out;
}

template <class T>
void expect_pytorch_masked_rows() {
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
  for (double s : {0.0, 0.1}) {
    for (bool strided : {false, true}) {
      SCOPED_TRACE(std::string(std::is_same_v<T, float> ? "float" : "double") + " s=" + std::to_string(s) +
                   (strided ? " strided" : " contiguous"));
      const PyTorchRows want = pytorch_masked_rows<T>(s), got = ours_on_masked_rows<T>(s, strided);
      for (std::size_t r = 0; r < 5; ++r) {
        if (std::isinf(want.loss(r))) {
          EXPECT_EQ(got.loss(r), want.loss(r)) << "row " << r;
        } else {  // relative to the value (one is 1e37), absolute near 0
          EXPECT_NEAR(got.loss(r), want.loss(r), tol * std::max(1.0, std::abs(want.loss(r)))) << "row " << r;
        }
      }
      EXPECT_LT(max_abs_diff(got.grad, want.grad), tol);
    }
  }
}

TEST(CrossEntropy, MaskedAndHugeLogitsMatchPyTorchInFloat) { expect_pytorch_masked_rows<float>(); }
TEST(CrossEntropy, MaskedAndHugeLogitsMatchPyTorchInDouble) { expect_pytorch_masked_rows<double>(); }

TEST(CrossEntropy, FullLabelSmoothingWithAMaskedTargetIsInfNotNaN) {
  // PyTorch 1.13: F.cross_entropy(x, torch.tensor([1]), label_smoothing=1.0) for x = [[1, -inf, 2]]
  // gives nan (0 * inf in its nll term) and x.grad [[-0.0644, -0.3333, 0.3977]]; here the nll term
  // has weight 0 and is left out, so the loss is the smoothing term's inf.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor<double> x(xt::xarray<double>{{1.0, -inf, 2.0}}, true);
  GradientTape tape;
  const auto loss = cross_entropy(x, IndexArray{1}, {.label_smoothing = 1.0});
  EXPECT_EQ(loss.item(), inf);
  tape.backward(loss);
  const double p0 = 1.0 / (1.0 + std::exp(1.0)), third = 1.0 / 3.0;  // softmax([1, 2]) = [p0, 1 - p0]
  EXPECT_LT(max_abs_diff(x.grad(), xt::xarray<double>{{p0 - third, -third, 1.0 - p0 - third}}), 1e-15);
}

TEST(CrossEntropy, FullyMaskedRowGivesInfAndNoGradient) {
  // PyTorch gives NaN for a row of only -inf; here it follows softmax.h's rule for such rows:
  // log p_t = -inf, so the loss is inf, and no gradient flows into the row.
  const double inf = std::numeric_limits<double>::infinity();
  for (double s : {0.0, 0.1}) {
    SCOPED_TRACE("s=" + std::to_string(s));
    const Tensor<double> logits(xt::xarray<double>{{-inf, -inf, -inf}, {1.0, 2.0, 3.0}}, true);
    GradientTape tape;
    const auto loss = cross_entropy(logits, IndexArray{1, 2}, {.label_smoothing = s});
    EXPECT_EQ(loss.item(), inf);
    tape.backward(loss);
    const auto g = logits.grad();
    EXPECT_EQ(xt::xarray<double>(xt::view(g, 0)), (xt::xarray<double>{0.0, 0.0, 0.0}));
    EXPECT_TRUE(xt::all(xt::isfinite(g)));
    EXPECT_LT(g(1, 2), 0.0);  // the other row learns as usual
  }
}

TEST(CrossEntropy, FullyMaskedRowHasNoSecondDerivative) {
  // The loss is inf there, so gradgradcheck cannot see the row; its gradient is 0 whatever the
  // seed and the logits, so the derivatives of that gradient are 0 too.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor<double> logits(xt::xarray<double>{{1.0, 2.0, 3.0}, {-inf, -inf, -inf}}, true);
  const Tensor<double> seed(xt::xarray<double>{0.7, 1.3}, true);
  GradientTape tape;
  const auto loss = cross_entropy(logits, IndexArray{0, 1}, {.label_smoothing = 0.1, .reduction = Reduction::None});
  const auto dlogits = tape.gradient(sum(mul(loss, seed)), {logits}, {.create_graph = true})[0];
  const Tensor<double> direction(xt::xarray<double>{{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}});
  const auto second = tape.gradient(sum(mul(dlogits, direction)), {logits, seed});
  EXPECT_EQ(xt::xarray<double>(xt::view(second[0].value(), 1)), (xt::xarray<double>{0.0, 0.0, 0.0}));
  EXPECT_TRUE(xt::all(xt::isfinite(second[0].value())));
  EXPECT_EQ(second[1].value()(1), 0.0);
  EXPECT_NE(second[1].value()(0), 0.0);  // the live row's gradient does move with its seed
}

TEST(CrossEntropy, GradcheckOnMaskedLogits) {
  // Masked entries at -1e30: finite, so central differences stay defined. With label smoothing the
  // loss holds s * mean_c(x_c - max), about 1e28 with such an entry, and differences of 1e-6 vanish
  // in it: the smoothed case masks at -40 instead (p = exp(-40) ~ 4e-18, masked for every purpose).
  for (const Shape& shape : std::vector<Shape>{{3, 4}, {2, 4, 3}}) {
    for (double s : {0.0, 0.1}) {
      SCOPED_TRACE(format_shape(shape) + " s=" + std::to_string(s));
      Tensor<double> logits = random_tensor(shape, 17, true, -2.0, 2.0);
      const IndexArray targets = make_targets(shape, false);
      // Mask every third element, never a target's own logit.
      const Dims d = dims_of(shape);
      for (std::size_t i = 0; i < logits.numel(); i += 3) {
        const std::size_t c = (i / d.l) % d.c, n = i / (d.c * d.l), j = i % d.l;
        if (targets.data()[n * d.l + j] != static_cast<Index>(c)) {
          logits.mutable_value().data()[i] = s == 0.0 ? -1e30 : -40.0;
        }
      }
      EXPECT_TRUE(passes_gradcheck(
          [&](const Inputs& x) { return cross_entropy(x[0], targets, {.label_smoothing = s}); }, {logits}));
    }
  }
}

TEST(CrossEntropy, BadInputsThrowNamingOpAndShapes) {
  const auto logits = random_tensor({2, 3}, 16);
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(random_tensor({}, 1), IndexArray(0)); }, {"cross_entropy", "[]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(logits, IndexArray{0, 1, 2}); },
                                      {"cross_entropy", "[2,3]", "[3]", "expected targets [2]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(random_tensor({2, 3, 4}, 1), IndexArray{{0, 1, 2}, {0, 1, 2}}); },
                                      {"cross_entropy", "[2,3,4]", "[2,3]", "expected targets [2,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { cross_entropy(random_tensor({3}, 1), IndexArray{1}); },
                                      {"cross_entropy", "[3]", "[1]", "expected targets []"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { cross_entropy(logits, IndexArray{0, 3}); },
                                      {"cross_entropy", "target 3", "position [1]", "[2]", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { cross_entropy(logits, IndexArray{-1, 0}); },
                                      {"cross_entropy", "target -1", "position [0]", "ignore_index -100"}));
  for (double s : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_TRUE(throws_with<ValueError>([&] { cross_entropy(logits, IndexArray{0, 1}, {.label_smoothing = s}); },
                                        {"cross_entropy", "label_smoothing", "[2,3]"}));
  }
  EXPECT_TRUE(throws_with<ValueError>([&] { cross_entropy(logits, IndexArray{0, 1}, {.reduction = Reduction::BatchMean}); },
                                      {"cross_entropy", "BatchMean", "[2,3]"}));
  EXPECT_TRUE(
      throws_with<ValueError>([&] { cross_entropy(Tensor<double>(), IndexArray{0}); }, {"cross_entropy", "undefined"}));
}

// ---------------------------------------------------------------- nll_loss

TEST(NllLoss, ForwardMatchesNaiveReferenceOverShapes) {
  for (const Shape& shape : kLogitShapes) {
    for (Reduction r : kClassReductions) {
      SCOPED_TRACE(format_shape(shape) + " " + name_of(r));
      const auto lp = random_tensor(shape, 21, false, -3.0, 0.0);
      const IndexArray targets = make_targets(shape, shape.size() > 1);
      const auto expected = naive_reduce(naive_nll(lp.value(), targets, kIgnore), r, count_kept(targets, kIgnore));
      EXPECT_LT(max_abs_diff(nll_loss(lp, targets, {.reduction = r}).value(), expected), 1e-12);
    }
  }
}

TEST(NllLoss, HandComputed) {
  const Tensor<double> lp(xt::xarray<double>{{-0.5, -1.5, -2.0}, {-3.0, -0.25, -1.0}, {-1.0, -1.0, -1.0}});
  EXPECT_DOUBLE_EQ(nll_loss(lp, IndexArray{2, 1, kIgnore}).item(), (2.0 + 0.25) / 2.0);
  EXPECT_DOUBLE_EQ(nll_loss(lp, IndexArray{2, 1, 0}, {.reduction = Reduction::Sum}).item(), 3.25);
}

TEST(NllLoss, GradcheckOverShapesAndReductions) {
  for (const Shape& shape : kLogitShapes) {
    for (Reduction r : kClassReductions) {
      SCOPED_TRACE(format_shape(shape) + " " + name_of(r));
      const IndexArray targets = make_targets(shape, shape.size() > 1);
      EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return nll_loss(x[0], targets, {.reduction = r}); },
                                   {random_tensor(shape, 22)}));
    }
  }
}

TEST(NllLoss, BadInputsThrowNamingOpAndShapes) {
  const auto lp = random_tensor({2, 3}, 23);
  EXPECT_TRUE(throws_with<ShapeError>([&] { nll_loss(lp, IndexArray{{0, 1}}); }, {"nll_loss", "[2,3]", "[1,2]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { nll_loss(lp, IndexArray{5, 0}); },
                                      {"nll_loss", "target 5", "position [0]", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { nll_loss(lp, IndexArray{0, 1}, {.reduction = Reduction::BatchMean}); },
                                      {"nll_loss", "BatchMean", "[2,3]"}));
}

// ---------------------------------------------------------------- kl_div

// sum over elements of t (log t - x), 0 where t == 0, reduced as PyTorch.
xt::xarray<double> naive_kl(const xt::xarray<double>& x, const xt::xarray<double>& t, Reduction r) {
  xt::xarray<double> out = xt::zeros<double>(x.shape());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double p = t.data()[i];
    if (p != 0.0) out.data()[i] = p * (std::log(p) - x.data()[i]);
  }
  if (r == Reduction::BatchMean) {
    const double batch = x.dimension() == 0 ? 1.0 : static_cast<double>(x.shape()[0]);
    return xt::xarray<double>(naive_reduce(out, Reduction::Sum, 1.0)() / batch);
  }
  return naive_reduce(out, r, static_cast<double>(x.size()));
}

const std::vector<Shape> kPointwiseShapes = {{}, {5}, {2, 3}, {3, 1, 2}};

TEST(KlDiv, ForwardMatchesNaiveReferenceWithZeroTargets) {
  for (const Shape& shape : kPointwiseShapes) {
    for (Reduction r : kAllReductions) {
      SCOPED_TRACE(format_shape(shape) + " " + name_of(r));
      const auto x = random_tensor(shape, 31, false, -3.0, 0.0);
      auto t = random_tensor(shape, 32, false, 0.0, 1.0);
      for (std::size_t i = 0; i < t.numel(); i += 2) t.mutable_value().data()[i] = 0.0;
      const auto got = kl_div(x, t, r);
      EXPECT_LT(max_abs_diff(got.value(), naive_kl(x.value(), t.value(), r)), 1e-12);
    }
  }
}

TEST(KlDiv, BatchMeanDividesByFirstAxis) {
  const Tensor<double> x(xt::xarray<double>{{-1.0, -2.0}, {-0.5, -1.0}});
  const Tensor<double> t(xt::xarray<double>{{0.5, 0.5}, {1.0, 0.0}});
  const double total = 0.5 * (std::log(0.5) + 1.0) + 0.5 * (std::log(0.5) + 2.0) + 1.0 * (0.0 + 0.5);
  EXPECT_NEAR(kl_div(x, t, Reduction::BatchMean).item(), total / 2.0, 1e-14);
  EXPECT_NEAR(kl_div(x, t, Reduction::Mean).item(), total / 4.0, 1e-14);
}

TEST(KlDiv, GradcheckBothArgumentsOverShapesAndReductions) {
  for (const Shape& shape : kPointwiseShapes) {
    for (Reduction r : kAllReductions) {
      SCOPED_TRACE(format_shape(shape) + " " + name_of(r));
      // Targets kept away from 0 so that t +- eps stays inside the domain of log.
      EXPECT_TRUE(passes_gradcheck([r](const Inputs& x) { return kl_div(x[0], x[1], r); },
                                   {random_tensor(shape, 33, true, -3.0, 0.0), random_tensor(shape, 34, true, 0.1, 1.0)}));
    }
  }
}

TEST(KlDiv, ZeroTargetsGiveFiniteGradients) {
  const Tensor<double> x(xt::xarray<double>{-1.0, -2.0, -0.5}, true);
  const Tensor<double> t(xt::xarray<double>{0.0, 0.25, 0.0}, true);
  GradientTape tape;
  tape.backward(kl_div(x, t, Reduction::Sum));
  EXPECT_EQ(x.grad(), (xt::xarray<double>{0.0, -0.25, 0.0}));
  EXPECT_EQ(t.grad()(0), 0.0);
  EXPECT_EQ(t.grad()(2), 0.0);
  EXPECT_DOUBLE_EQ(t.grad()(1), std::log(0.25) + 1.0 + 2.0);
  // The input-only gradient is checked numerically (t is held constant, so t == 0 is fine).
  const Tensor<double> fixed_t = t.detach();
  EXPECT_TRUE(passes_gradcheck([&fixed_t](const Inputs& in) { return kl_div(in[0], fixed_t, Reduction::Sum); },
                               {random_tensor({3}, 35, true, -2.0, 0.0)}));
}

// The Hessian of kl_div at a zero target is symmetric: d(dL/dx)/dt = d(dL/dt)/dx = -1 (PyTorch
// 1.13's kl_div double backward at x = -0.7, t = [0, 0.5]: [[0, -1], [-1, nan]] per element at
// t = 0, [[0, -1], [-1, 2]] at t = 0.5; tapegrad's d2/dt2 at t = 0 is 0, as its dL/dt there).
TEST(KlDiv, HessianAtAZeroTargetIsSymmetricAsPyTorch) {
  const Tensor<double> x(xt::xarray<double>{-0.7, -0.7}, true);
  const Tensor<double> t(xt::xarray<double>{0.0, 0.5}, true);
  GradientTape tape(/*persistent=*/true);
  const auto first = tape.gradient(kl_div(x, t, Reduction::Sum), {x, t}, {.create_graph = true});
  EXPECT_EQ(first[0].value(), (xt::xarray<double>{0.0, -0.5}));
  const auto of_dx = tape.gradient(sum(first[0]), {x, t});
  const auto of_dt = tape.gradient(sum(first[1]), {x, t});
  EXPECT_EQ(of_dx[0].value(), (xt::xarray<double>{0.0, 0.0}));
  EXPECT_EQ(of_dx[1].value(), (xt::xarray<double>{-1.0, -1.0}));
  EXPECT_EQ(of_dt[0].value(), (xt::xarray<double>{-1.0, -1.0}));
  EXPECT_EQ(of_dt[1].value(), (xt::xarray<double>{0.0, 2.0}));
}

TEST(NllLoss, MinusInfLogProbsAsPyTorch) {
  // PyTorch 1.13: F.nll_loss(x, t) with x = [[-inf, -0.5, -1.0]]: t = [1] gives 0.5 and
  // x.grad [[0, -1, 0]]; t = [0] gives inf and x.grad [[-1, 0, 0]].
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& [target, loss, grad] : {std::tuple{1, 0.5, xt::xarray<double>{{0.0, -1.0, 0.0}}},
                                           std::tuple{0, inf, xt::xarray<double>{{-1.0, 0.0, 0.0}}}}) {
    const Tensor<double> x(xt::xarray<double>{{-inf, -0.5, -1.0}}, true);
    GradientTape tape;
    const auto l = nll_loss(x, IndexArray{target});
    EXPECT_EQ(l.item(), loss);
    tape.backward(l);
    EXPECT_EQ(x.grad(), grad);
  }
}

TEST(KlDiv, MinusInfLogInput) {
  const double inf = std::numeric_limits<double>::infinity();
  // Where the target is 0 the term is 0 whatever the input, -inf included (PyTorch 1.13 gives NaN
  // there: 0 * -inf); the gradients there are 0 (PyTorch: NaN for the target's).
  const Tensor<double> x(xt::xarray<double>{-inf, -0.5, -1.0}, true);
  const Tensor<double> t(xt::xarray<double>{0.0, 0.6, 0.4}, true);
  {
    GradientTape tape;
    const auto l = kl_div(x, t, Reduction::Sum);
    EXPECT_NEAR(l.item(), 0.6 * (std::log(0.6) + 0.5) + 0.4 * (std::log(0.4) + 1.0), 1e-15);
    tape.backward(l);
    EXPECT_EQ(x.grad(), (xt::xarray<double>{0.0, -0.6, -0.4}));
    EXPECT_EQ(t.grad()(0), 0.0);
  }
  // A positive target on a -inf input: PyTorch 1.13 gives inf, x.grad -t and t.grad
  // [inf, 0.5837, 1.0837] (log t + 1 - x) for t = [0.2, 0.4, 0.4].
  const Tensor<double> x2(xt::xarray<double>{-inf, -0.5, -1.0}, true);
  const Tensor<double> t2(xt::xarray<double>{0.2, 0.4, 0.4}, true);
  GradientTape tape;
  const auto l = kl_div(x2, t2, Reduction::Sum);
  EXPECT_EQ(l.item(), inf);
  tape.backward(l);
  EXPECT_EQ(x2.grad(), (xt::xarray<double>{-0.2, -0.4, -0.4}));
  EXPECT_EQ(t2.grad()(0), inf);
  EXPECT_NEAR(t2.grad()(1), 0.5837, 1e-4);
  EXPECT_NEAR(t2.grad()(2), 1.0837, 1e-4);
}

TEST(KlDiv, MismatchedShapesThrowNamingBoth) {
  EXPECT_TRUE(throws_with<ShapeError>([] { kl_div(random_tensor({2, 3}, 1), random_tensor({3, 2}, 2)); },
                                      {"kl_div", "[2,3]", "[3,2]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { kl_div(random_tensor({2, 3}, 1), random_tensor({3}, 2)); },
                                      {"kl_div", "[2,3]", "[3]"}));
}

// ---------------------------------------------------------------- mse_loss

TEST(MseLoss, ForwardMatchesNaiveReference) {
  for (const Shape& shape : kPointwiseShapes) {
    for (Reduction r : kClassReductions) {
      SCOPED_TRACE(format_shape(shape) + " " + name_of(r));
      const auto x = random_tensor(shape, 41, false);
      const auto y = random_tensor(shape, 42, false);
      xt::xarray<double> sq = xt::zeros<double>(shape);
      for (std::size_t i = 0; i < sq.size(); ++i) {
        const double d = x.value().data()[i] - y.value().data()[i];
        sq.data()[i] = d * d;
      }
      EXPECT_LT(max_abs_diff(mse_loss(x, y, r).value(), naive_reduce(sq, r, static_cast<double>(sq.size()))), 1e-14);
    }
  }
}

TEST(MseLoss, GradcheckBothArgumentsOverShapesAndReductions) {
  for (const Shape& shape : kPointwiseShapes) {
    for (Reduction r : kClassReductions) {
      SCOPED_TRACE(format_shape(shape) + " " + name_of(r));
      EXPECT_TRUE(passes_gradcheck([r](const Inputs& x) { return mse_loss(x[0], x[1], r); },
                                   {random_tensor(shape, 43), random_tensor(shape, 44)}));
    }
  }
}

TEST(MseLoss, BadInputsThrowNamingOpAndShapes) {
  // Broadcastable shapes are refused too (PyTorch only warns, which hides a wrong target).
  EXPECT_TRUE(throws_with<ShapeError>([] { mse_loss(random_tensor({2, 3}, 1), random_tensor({3}, 2)); },
                                      {"mse_loss", "[2,3]", "[3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { mse_loss(random_tensor({2}, 1), random_tensor({2}, 2), Reduction::BatchMean); },
                                      {"mse_loss", "BatchMean", "[2]"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;


// A leaf whose entry `at` (flat) is -inf: a masked logit.
Tensor<double> with_minus_inf(Tensor<double> t, std::size_t at) {
  t.mutable_value().data()[at] = -std::numeric_limits<double>::infinity();
  return t;
}

// The options are written for double and rebuilt for the sample's element type (no weight here).
OpCase cross_entropy_case(std::string name, Shape shape, IndexArray targets, CrossEntropyOptions<double> options,
                          std::uint64_t seed) {
  return {std::move(name),
          [targets, options](const auto& x) {
            return cross_entropy(x[0], targets,
                                 {.ignore_index = options.ignore_index,
                                  .label_smoothing = options.label_smoothing,
                                  .reduction = options.reduction});
          },
          [shape, seed] { return V{leaf(shape, seed, -2.0, 2.0)}; }};
}

// Every reduction and option. Class weights are constants (not requiring a gradient) for
// cross_entropy and nll_loss, as in PyTorch. nll_loss is linear in its input, so it is given a
// square.
TAPEGRAD_OP_SPEC(cross_entropy) {
  OpSpec s("cross_entropy", "loss");
  s.remark = "weight, ignore_index, label_smoothing; class-index or class-probability targets";
  s.samples = {
      // cross_entropy: every reduction, ignore_index, label smoothing, [C], spatial, a -inf logit.
      cross_entropy_case("cross_entropy_mean", {3, 4}, IndexArray{0, 3, 1}, {}, 340),
      cross_entropy_case("cross_entropy_none", {3, 4}, IndexArray{2, 0, 3}, {.reduction = Reduction::None}, 341),
      cross_entropy_case("cross_entropy_sum_ignore", {4, 3}, IndexArray{1, kIgnore, 0, 2},
                         {.reduction = Reduction::Sum}, 342),
      cross_entropy_case("cross_entropy_mean_ignore_smoothing", {4, 3}, IndexArray{kIgnore, 2, 0, 2},
                         {.label_smoothing = 0.2}, 343),
      cross_entropy_case("cross_entropy_all_ignored", {2, 3}, IndexArray{kIgnore, kIgnore}, {}, 344),
      cross_entropy_case("cross_entropy_full_smoothing_none", {2, 3}, IndexArray{1, 2},
                         {.label_smoothing = 1.0, .reduction = Reduction::None}, 345),
      cross_entropy_case("cross_entropy_custom_ignore_index", {3, 3}, IndexArray{2, 1, 0},
                         {.ignore_index = 1, .label_smoothing = 0.1}, 346),
      cross_entropy_case("cross_entropy_classes_only", {5}, IndexArray(Index{3}), {}, 347),
      cross_entropy_case("cross_entropy_spatial", {2, 3, 2, 2}, IndexArray{{{0, 2}, {1, 1}}, {{2, kIgnore}, {0, 1}}},
                         {.label_smoothing = 0.3, .reduction = Reduction::None}, 348),
      {"cross_entropy_minus_inf_logit",
       [](const auto& x) { return cross_entropy(x[0], IndexArray{0, 2}, {.reduction = Reduction::None}); },
       [] { return V{with_minus_inf(leaf({2, 3}, 349), 1)}; }},
      // class weights: [C] logits with a 0-d target, [N, C] with ignored targets (and all ignored),
      // [N, C, d1, d2]; with and without label smoothing; a negative weight.
      {"cross_entropy_weight_classes_only",
       [](const auto& x) { return cross_entropy(x[0], IndexArray(Index{3}), {.weight = x[1], .label_smoothing = 0.2}); },
       [] { return V{leaf({5}, 601, -2.0, 2.0), constant({5}, 602, 0.2, 2.0)}; }},
      {"cross_entropy_weight_ignore_smoothing_mean",
       [](const auto& x) {
         return cross_entropy(x[0], IndexArray{1, kIgnore, 0, 2}, {.weight = x[1], .label_smoothing = 0.1});
       },
       [] { return V{leaf({4, 3}, 603, -2.0, 2.0), constant({3}, 604, 0.2, 2.0)}; }},
      {"cross_entropy_weight_custom_ignore_sum",
       [](const auto& x) {
         return cross_entropy(x[0], IndexArray{2, 1, 0}, {.weight = x[1], .ignore_index = 1, .reduction = Reduction::Sum});
       },
       [] { return V{leaf({3, 3}, 605, -2.0, 2.0), constant({3}, 606, -1.0, 2.0)}; }},
      {"cross_entropy_weight_all_ignored",
       [](const auto& x) { return cross_entropy(x[0], IndexArray{kIgnore, kIgnore}, {.weight = x[1]}); },
       [] { return V{leaf({2, 3}, 607, -2.0, 2.0), constant({3}, 608, 0.2, 2.0)}; }},
      {"cross_entropy_weight_spatial_none",
       [](const auto& x) {
         return cross_entropy(x[0], IndexArray{{{0, 2}, {1, 1}}, {{2, kIgnore}, {0, 1}}},
                              {.weight = x[1], .label_smoothing = 0.3, .reduction = Reduction::None});
       },
       [] { return V{leaf({2, 3, 2, 2}, 609, -2.0, 2.0), constant({3}, 610, 0.2, 2.0)}; }},
      // class-probability targets: logits, target and weight all differentiable, as PyTorch's.
      {"cross_entropy_probabilities_classes_only",
       [](const auto& x) { return cross_entropy(x[0], x[1], {.weight = x[2], .label_smoothing = 0.2}); },
       [] { return V{leaf({5}, 624, -2.0, 2.0), leaf({5}, 625, 0.0, 1.0), leaf({5}, 626, 0.2, 2.0)}; }},
      {"cross_entropy_probabilities_mean",
       [](const auto& x) { return cross_entropy(x[0], x[1]); },
       [] { return V{leaf({3, 4}, 627, -2.0, 2.0), leaf({3, 4}, 628, 0.0, 1.0)}; }},
      {"cross_entropy_probabilities_spatial_none",
       [](const auto& x) {
         return cross_entropy(x[0], x[1], {.weight = x[2], .label_smoothing = 0.3, .reduction = Reduction::None});
       },
       [] { return V{leaf({2, 3, 2, 2}, 629, -2.0, 2.0), leaf({2, 3, 2, 2}, 630, 0.0, 1.0), constant({3}, 631, 0.2, 2.0)}; }},
  };
  s.errors = {
      error_input<ValueError>("cross_entropy_target_out_of_range", "`cross_entropy`", "target 3 of 3 classes",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::one_d({0, 3})); },
                  {"cross_entropy", "target 3", "position [1]", "[0, 3)"}),
      error_input<ValueError>("cross_entropy_negative_target", "`cross_entropy`", "target -1 (not ignore_index)",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::one_d({-1, 0})); },
                  {"cross_entropy", "target -1", "position [0]", "ignore_index -100"}),
      error_input<ShapeError>("cross_entropy_target_shape", "`cross_entropy`", "targets [3] for logits [2,3]",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::one_d({0, 1, 2})); },
                  {"cross_entropy", "targets [3]", "[2,3]"}),
      error_input<ShapeError>("cross_entropy_0d_logits", "`cross_entropy`", "0-d logits",
                  [] { return cross_entropy(bad_inputs::zeros({}), bad_inputs::indices({}, 0)); },
                  {"cross_entropy", "logits []", "class axis"}),
      error_input<ValueError>("cross_entropy_label_smoothing_above_one", "`cross_entropy`", "label_smoothing 1.5",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::one_d({0, 1}), {.label_smoothing = 1.5}); },
                  {"cross_entropy", "label_smoothing 1.5"}),
      error_input<ValueError>("cross_entropy_label_smoothing_nan", "`cross_entropy`", "label_smoothing NaN",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::one_d({0, 1}), {.label_smoothing = bad_inputs::nan}); },
                  {"cross_entropy", "label_smoothing nan"}),
      error_input<ValueError>("cross_entropy_batchmean_reduction", "`cross_entropy`", "Reduction::BatchMean",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::one_d({0, 1}), {.reduction = Reduction::BatchMean}); },
                  {"cross_entropy", "reduction", "BatchMean"}),
      error_input<ValueError>("cross_entropy_undefined_logits", "`cross_entropy`", "undefined logits",
                  [] { return cross_entropy(bad_inputs::undefined(), bad_inputs::one_d({0})); },
                  {"cross_entropy", "'logits'", "undefined"}),
      error_input<ShapeError>("cross_entropy_weight_wrong_length", "`cross_entropy`", "weight [4] for 3 classes",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::indices({2}, 0), {.weight = bad_inputs::zeros({4})}); },
                  {"cross_entropy", "weight [4]", "[3]", "logits [2,3]"}),
      error_input<ValueError>("cross_entropy_weight_requires_grad", "`cross_entropy`", "a weight requiring a gradient, recording (PyTorch refuses it too)",
                  [] { return [] {
                GradientTape tape;
                cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::indices({2}, 0), {.weight = bad_inputs::leaf({3})});
              }(); },
                  {"cross_entropy", "weight [3]", "requires a gradient", "weight.detach()"}),
      error_input<ShapeError>("cross_entropy_probabilities_shape", "`cross_entropy`", "target probabilities [2,2] for logits [2,3]",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 2})); },
                  {"cross_entropy", "target probabilities [2,2]", "logits [2,3]"}),
      error_input<ValueError>("cross_entropy_probabilities_ignore_index", "`cross_entropy`", "ignore_index 0 with probabilities (PyTorch refuses it too)",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 3}), {.ignore_index = 0}); },
                  {"cross_entropy", "ignore_index 0", "probabilities", "[2,3]"}),
      error_input<ValueError>("cross_entropy_probabilities_label_smoothing_nan", "`cross_entropy`", "label_smoothing NaN with probabilities (PyTorch ignores it)",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 3}), {.label_smoothing = bad_inputs::nan}); },
                  {"cross_entropy", "label_smoothing nan", "[2,3]"}),
      error_input<ShapeError>("cross_entropy_probabilities_weight_wrong_length", "`cross_entropy`", "weight [2] for 3 classes",
                  [] { return cross_entropy(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 3}), {.weight = bad_inputs::zeros({2})}); },
                  {"cross_entropy", "weight [2]", "[3]"}),
  };
  s.pytorch = {
      {"nn.functional.cross_entropy",
       [](Call& c) -> Outputs {
         CrossEntropyOptions<double> options;
         options.weight = weight_arg(c);
         options.reduction = reduction_mode(c);
         if (const Value* v = c.kwarg("ignore_index")) options.ignore_index = c.integer(*v);
         if (const Value* v = c.kwarg("label_smoothing")) options.label_smoothing = c.number(*v);
         const T logits = c.tensor(c.input());
         const Value& target = c.arg(0);
         if (is_probabilities(target)) return {cross_entropy(logits, c.tensor(target), options)};
         return {cross_entropy(logits, c.indices(target), options)};
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(nll_loss) {
  OpSpec s("nll_loss", "loss");
  s.remark = "weight, ignore_index";
  s.samples = {
      // nll_loss: linear in log_probs, so of a square.
      {"nll_loss_mean_ignore",
       [](const auto& x) { return nll_loss(mul(x[0], x[0]), IndexArray{1, kIgnore, 0}); },
       [] { return V{leaf({3, 3}, 350)}; }},
      {"nll_loss_none_spatial",
       [](const auto& x) {
         return nll_loss(mul(x[0], x[0]), IndexArray{{0, 2}, {1, 1}}, {.reduction = Reduction::None});
       },
       [] { return V{leaf({2, 3, 2}, 351)}; }},
      {"nll_loss_sum_times_leaf",
       [](const auto& x) { return mul(nll_loss(x[0], IndexArray{2, 0}, {.reduction = Reduction::Sum}), x[1]); },
       [] { return V{leaf({2, 3}, 352), leaf({2}, 353)}; }},
      {"nll_loss_weight_classes_only",
       [](const auto& x) { return nll_loss(mul(x[0], x[0]), IndexArray(Index{1}), {.weight = x[1]}); },
       [] { return V{leaf({3}, 611), constant({3}, 612, 0.2, 2.0)}; }},
      {"nll_loss_weight_ignore_mean",
       [](const auto& x) { return nll_loss(mul(x[0], x[0]), IndexArray{1, kIgnore, 0}, {.weight = x[1]}); },
       [] { return V{leaf({3, 3}, 613), constant({3}, 614, 0.2, 2.0)}; }},
      {"nll_loss_weight_spatial_none",
       [](const auto& x) {
         return nll_loss(mul(x[0], x[0]), IndexArray{{{0, 2}, {kIgnore, 1}}, {{2, 2}, {0, 1}}},
                         {.weight = x[1], .reduction = Reduction::None});
       },
       [] { return V{leaf({2, 3, 2, 2}, 615), constant({3}, 616, 0.2, 2.0)}; }},
  };
  s.errors = {
      error_input<ValueError>("nll_loss_target_out_of_range", "`nll_loss`", "target 5 of 3 classes",
                  [] { return nll_loss(bad_inputs::zeros({2, 3}), bad_inputs::one_d({5, 0})); },
                  {"nll_loss", "target 5", "position [0]"}),
      error_input<ShapeError>("nll_loss_target_shape", "`nll_loss`", "targets [2,3] for [2,3,4]",
                  [] { return nll_loss(bad_inputs::zeros({2, 3, 4}), bad_inputs::indices({2, 3}, 0)); },
                  {"nll_loss", "targets [2,3]", "[2,3,4]"}),
      error_input<ValueError>("nll_loss_batchmean_reduction", "`nll_loss`", "Reduction::BatchMean",
                  [] { return nll_loss(bad_inputs::zeros({2, 3}), bad_inputs::indices({2}, 0), {.reduction = Reduction::BatchMean}); },
                  {"nll_loss", "BatchMean", "[2,3]"}),
      error_input<ShapeError>("nll_loss_weight_not_1d", "`nll_loss`", "weight [1,3]",
                  [] { return nll_loss(bad_inputs::zeros({2, 3}), bad_inputs::indices({2}, 0), {.weight = bad_inputs::zeros({1, 3})}); },
                  {"nll_loss", "weight [1,3]", "[3]", "log_probs [2,3]"}),
  };
  s.pytorch = {
      {"nn.functional.nll_loss",
       [](Call& c) -> Outputs {
         NllLossOptions<double> options;
         options.weight = weight_arg(c);
         options.reduction = reduction_mode(c);
         if (const Value* v = c.kwarg("ignore_index")) options.ignore_index = c.integer(*v);
         const T log_probs = c.tensor(c.input());
         return {nll_loss(log_probs, c.indices(c.arg(0)), options)};
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(kl_div) {
  OpSpec s("kl_div", "loss");
  s.remark = "log_target";
  s.samples = {
      // kl_div: both arguments, every reduction; zero targets (held constant: the loss is not
      // differentiable in a target at 0).
      OpCase("kl_div_mean", [](const auto& x) { return kl_div(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 360), leaf({2, 3}, 361, 0.1, 1.0)}; }).at_scale([] { return V{leaf({301, 200}, 922), leaf({301, 200}, 923, 0.1, 1.0)}; }),
      {"kl_div_none", [](const auto& x) { return kl_div(x[0], x[1], Reduction::None); },
       [] { return V{leaf({3, 2}, 362), leaf({3, 2}, 363, 0.1, 1.0)}; }},
      {"kl_div_sum", [](const auto& x) { return kl_div(x[0], x[1], Reduction::Sum); },
       [] { return V{leaf({4}, 364), leaf({4}, 365, 0.1, 1.0)}; }},
      {"kl_div_batchmean_squared_input", [](const auto& x) { return kl_div(mul(x[0], x[0]), x[1], Reduction::BatchMean); },
       [] { return V{leaf({3, 2}, 366), leaf({3, 2}, 367, 0.1, 1.0)}; }},
      {"kl_div_zero_targets",
       [](const auto& x) { return kl_div(mul(x[0], x[0]), x[1], Reduction::None); },
       [] {
         Tensor<double> target = constant({2, 3}, 368, 0.1, 1.0);
         target.mutable_value()(0, 1) = 0.0;
         target.mutable_value()(1, 2) = 0.0;
         return V{leaf({2, 3}, 369), target};
       }},
      // kl_div with log targets: both arguments, a 0-d pair, and a -inf target held constant.
      {"kl_div_log_target_batchmean", [](const auto& x) { return kl_div(x[0], x[1], Reduction::BatchMean, true); },
       [] { return V{leaf({3, 2}, 632, -2.0, 0.0), leaf({3, 2}, 633, -2.0, 0.0)}; }},
      {"kl_div_log_target_0d", [](const auto& x) { return kl_div(x[0], x[1], Reduction::Mean, true); },
       [] { return V{leaf({}, 634, -2.0, 0.0), leaf({}, 635, -2.0, 0.0)}; }},
      {"kl_div_log_target_minus_inf_none",
       [](const auto& x) { return kl_div(mul(x[0], x[0]), x[1], Reduction::None, true); },
       [] {
         Tensor<double> target = constant({2, 3}, 636, -2.0, 0.0);
         target.mutable_value()(1, 0) = -std::numeric_limits<double>::infinity();
         return V{leaf({2, 3}, 637), target};
       }},
  };
  s.errors = {
      error_input<ShapeError>("kl_div_shape_mismatch", "`kl_div`", "[2,3] and [3,2]",
                  [] { return kl_div(bad_inputs::zeros({2, 3}), bad_inputs::zeros({3, 2})); },
                  {"kl_div", "[2,3]", "[3,2]"}),
      error_input<ShapeError>("kl_div_log_target_shape_mismatch", "`kl_div`", "log_target with target [2,1] for [2,3] (PyTorch would broadcast)",
                  [] { return kl_div(bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 1}), Reduction::Mean, true); },
                  {"kl_div", "log_input [2,3]", "target [2,1]"}),
  };
  s.pytorch = {
      {"nn.functional.kl_div",
       [](Call& c) -> Outputs {
         const Value* log_target = c.kwarg("log_target");
         const T log_input = c.tensor(c.input());
         return {kl_div(log_input, c.tensor(c.arg(0)), reduction_mode(c), log_target && c.boolean(*log_target))};
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(mse_loss) {
  OpSpec s("mse_loss", "loss");
  s.samples = {
      // mse_loss: both arguments, every reduction.
      {"mse_loss_mean", [](const auto& x) { return mse_loss(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 370), leaf({2, 3}, 371)}; }},
      OpCase("mse_loss_none", [](const auto& x) { return mse_loss(x[0], x[1], Reduction::None); },
       [] { return V{leaf({3, 2}, 372), leaf({3, 2}, 373)}; }).at_scale([] { return V{leaf({301, 200}, 920), leaf({301, 200}, 921)}; }),
      {"mse_loss_sum_constant_target", [](const auto& x) { return mse_loss(x[0], x[1], Reduction::Sum); },
       [] { return V{leaf({4}, 374), constant({4}, 375)}; }},
  };
  s.errors = {
      error_input<ValueError>("mse_loss_batchmean_reduction", "`mse_loss`", "Reduction::BatchMean",
                  [] { return mse_loss(bad_inputs::zeros({2}), bad_inputs::zeros({2}), Reduction::BatchMean); },
                  {"mse_loss", "BatchMean", "[2]"}),
      error_input<ShapeError>("mse_loss_shape_mismatch", "`mse_loss`", "[2,3] and [3]",
                  [] { return mse_loss(bad_inputs::zeros({2, 3}), bad_inputs::zeros({3})); },
                  {"mse_loss", "[2,3]", "[3]"}),
      error_input<ValueError>("mse_loss_undefined_target", "`mse_loss`", "undefined target",
                  [] { return mse_loss(bad_inputs::zeros({2}), bad_inputs::undefined()); },
                  {"mse_loss", "'target'", "undefined"}),
  };
  s.pytorch = {
      {"nn.functional.mse_loss",
       [](Call& c) -> Outputs {
         const T input = c.tensor(c.input());
         return {mse_loss(input, c.tensor(c.arg(0)), reduction_mode(c))};
       }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
