#include <cmath>
#include <limits>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "autograd/ops/attention.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/masking.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {


// (input shape, mask shape) pairs: same shape, broadcast over leading, middle and trailing axes,
// a 0-d mask, and the [batch, 1, 1, keys]-style padding mask over a 4-D input.
const std::vector<std::pair<Shape, Shape>> kMaskShapes = {
    {{2, 3}, {2, 3}},    {{2, 3}, {3}},
    {{2, 3}, {2, 1}},    {{2, 3}, {}},
    {{2, 3}, {1, 1}},    {{3, 2, 5, 4}, {2, 1, 4}},
    {{2, 1, 3}, {1, 3}}, {{3, 2, 2, 4}, {3, 1, 1, 4}},
};

Mask random_fill_mask(const Shape& shape, std::uint64_t seed) {
  return Mask(xt::greater(random_tensor(shape, seed, false, 0.0, 1.0).value(), 0.5));
}

// The mask element that broadcasting pairs with flat element `flat` of an array of `shape`.
bool mask_at(const Mask& mask, const Shape& shape, std::size_t flat) {
  const std::size_t lead = shape.size() - mask.dimension();
  std::size_t pos = 0, mask_stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::size_t index = flat % shape[d];
    flat /= shape[d];
    if (d < lead) continue;
    const std::size_t size = mask.shape()[d - lead];
    if (size != 1) pos += index * mask_stride;
    mask_stride *= size;
  }
  return mask.data()[pos];
}

TEST(MaskedFill, ForwardMatchesHandComputed) {
  const Tensor<double> a(xt::xarray<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(masked_fill(a, Mask{{true, false, false}, {false, true, false}}, 9.0).value(),
            (xt::xarray<double>{{9.0, 2.0, 3.0}, {4.0, 9.0, 6.0}}));
  EXPECT_EQ(masked_fill(a, Mask{false, false, true}, -kInf).value(),
            (xt::xarray<double>{{1.0, 2.0, -kInf}, {4.0, 5.0, -kInf}}));
  Mask column{true, false};  // ({{true}, {false}} is ambiguous to xtensor)
  column.reshape({2, 1});
  EXPECT_EQ(masked_fill(a, column, 0.0).value(), (xt::xarray<double>{{0.0, 0.0, 0.0}, {4.0, 5.0, 6.0}}));
}

TEST(MaskedFill, BroadcastMasksMatchNaiveLoops) {
  std::uint64_t seed = 1;
  for (const auto& [shape, mask_shape] : kMaskShapes) {
    SCOPED_TRACE(format_shape(shape) + " mask " + format_shape(mask_shape));
    const auto a = random_tensor(shape, seed++);
    const Mask mask = random_fill_mask(mask_shape, seed++);
    const auto y = masked_fill(a, mask, -kInf);
    ASSERT_EQ(y.shape(), shape);
    for (std::size_t i = 0; i < a.numel(); ++i) {
      EXPECT_EQ(y.value().data()[i], mask_at(mask, shape, i) ? -kInf : a.value().data()[i]);
    }
  }
}

TEST(MaskedFill, GradientIsZeroWhereFilled) {
  std::uint64_t seed = 100;
  for (const auto& [shape, mask_shape] : kMaskShapes) {
    SCOPED_TRACE(format_shape(shape) + " mask " + format_shape(mask_shape));
    const auto a = random_tensor(shape, seed++);
    const Mask mask = random_fill_mask(mask_shape, seed++);
    const xt::xarray<double> g = random_tensor(shape, seed++, false).value();
    GradientTape tape;
    tape.backward(masked_fill(a, mask, -kInf), g);
    for (std::size_t i = 0; i < a.numel(); ++i)
      EXPECT_EQ(a.grad().data()[i], mask_at(mask, shape, i) ? 0.0 : g.data()[i]);
  }
}

TEST(MaskedFill, GradcheckOverBroadcastMasks) {
  std::uint64_t seed = 200;
  for (const auto& [shape, mask_shape] : kMaskShapes) {
    SCOPED_TRACE(format_shape(shape) + " mask " + format_shape(mask_shape));
    const Mask mask = random_fill_mask(mask_shape, seed++);
    EXPECT_TRUE(passes_gradcheck([mask](const Inputs& x) { return masked_fill(x[0], mask, 2.5); },
                                 {random_tensor(shape, seed++)}));
  }
}

TEST(MaskedFill, WorksForFloat) {
  const Tensor<float> a(xt::xarray<float>{1.0f, 2.0f});
  EXPECT_EQ(masked_fill(a, Mask{false, true}, -std::numeric_limits<float>::infinity()).value(),
            (xt::xarray<float>{1.0f, -std::numeric_limits<float>::infinity()}));
}

TEST(MaskedFill, InputBroadcastsToTheMasksShapeAndItsGradientSumsBack) {
  // torch.tensor([1., 2., 3.]).masked_fill(torch.tensor([[True, False, False], [False, True, False]]), -1.)
  const Tensor<double> a(xt::xarray<double>{1.0, 2.0, 3.0}, true);
  GradientTape tape;
  const Tensor<double> y = masked_fill(a, Mask{{true, false, false}, {false, true, false}}, -1.0);
  EXPECT_EQ(y.value(), (xt::xarray<double>{{-1.0, 2.0, 3.0}, {1.0, -1.0, 3.0}}));
  tape.backward(sum(mul(y, Tensor<double>(xt::xarray<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}))));
  EXPECT_EQ(a.grad(), (xt::xarray<double>{4.0, 2.0, 9.0}));  // PyTorch's
  // Both sides broadcast: [2,1] under [3] gives [2,3].
  const Tensor<double> column = reshape(Tensor<double>(xt::xarray<double>{1.0, 2.0}), {2, 1});
  EXPECT_EQ(masked_fill(column, Mask{true, false, true}, 0.0).value(), (xt::xarray<double>{{0.0, 1.0, 0.0}, {0.0, 2.0, 0.0}}));
  for (const auto& [shape_a, shape_mask] : std::vector<std::pair<Shape, Shape>>{{{3}, {2, 3}}, {{2, 1}, {3}}, {{}, {2, 2}}}) {
    SCOPED_TRACE(format_shape(shape_a) + " under " + format_shape(shape_mask));
    const Mask mask = random_fill_mask(shape_mask, 305);
    EXPECT_TRUE(passes_gradcheck([mask](const Inputs& x) { return masked_fill(x[0], mask, 0.5); },
                                 {random_tensor(shape_a, 306)}));
  }
}

TEST(MaskedFill, ShapesThatDoNotBroadcastThrowNamingBoth) {
  const auto a = random_tensor({2, 3}, 301);
  EXPECT_TRUE(throws_with<ShapeError>([&] { masked_fill(a, Mask::from_shape({3, 2}), 0.0); },
                                      {"masked_fill", "[2,3]", "[3,2]", "do not broadcast"}));
  EXPECT_TRUE(
      throws_with<ShapeError>([&] { masked_fill(a, Mask::from_shape({2}), 0.0); }, {"masked_fill", "[2,3]", "[2]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { masked_fill(a, Mask::from_shape({4, 3, 3}), 0.0); },
                                      {"masked_fill", "[2,3]", "[4,3,3]"}));
  EXPECT_TRUE(
      throws_with<ValueError>([] { masked_fill(Tensor<double>(), Mask{true}, 0.0); }, {"masked_fill", "undefined"}));
}

TEST(MaskedFill, ZeroDTensorValueGetsTheSumOfTheFilledGradients) {
  // torch.tensor([[1., 2., 3.], [4., 5., 6.]]).masked_fill(m, v) with v = torch.tensor(-1.)
  GradientTape tape;
  const Tensor<double> a(xt::xarray<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, true);
  const Tensor<double> value(xt::xarray<double>(-1.0), true);
  const Mask mask{{true, false, true}, {false, false, true}};
  const Tensor<double> y = masked_fill(a, mask, value);
  EXPECT_EQ(y.value(), (xt::xarray<double>{{-1.0, 2.0, -1.0}, {4.0, 5.0, -1.0}}));
  tape.backward(sum(mul(y, Tensor<double>(xt::xarray<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}))));
  EXPECT_EQ(a.grad(), (xt::xarray<double>{{0.0, 2.0, 0.0}, {4.0, 5.0, 0.0}}));
  EXPECT_EQ(value.grad(), xt::xarray<double>(1.0 + 3.0 + 6.0));
}

TEST(MaskedFill, ZeroDTensorValueUnderABroadcastInputCountsEveryFilledCopy) {
  // A [3] input under a [2,3] mask: the output is [2,3], and value fills three of its elements.
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  const Tensor<double> a(xt::xarray<double>{1.0, 2.0, 3.0}, true);
  const Tensor<double> value(xt::xarray<double>(7.0), true);
  const Tensor<double> y = masked_fill(a, Mask{{true, false, false}, {false, true, true}}, value);
  EXPECT_EQ(y.value(), (xt::xarray<double>{{7.0, 2.0, 3.0}, {1.0, 7.0, 7.0}}));
  tape.backward(sum(mul(y, Tensor<double>(xt::xarray<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}))));
  EXPECT_EQ(a.grad(), (xt::xarray<double>{4.0, 2.0, 3.0}));
  EXPECT_EQ(value.grad(), xt::xarray<double>(1.0 + 5.0 + 6.0));
  // An infinite gradient where nothing was filled does not reach value as NaN.
  const Tensor<double> v2(xt::xarray<double>(0.0), true);
  tape.backward(sum(mul(masked_fill(a, Mask{true, false, false}, v2), Tensor<double>(xt::xarray<double>{2.0, kInf, 1.0}))));
  EXPECT_EQ(v2.grad(), xt::xarray<double>(2.0));
}

TEST(MaskedFill, ZeroDTensorValueGradcheckOverBroadcastMasks) {
  for (const auto& [shape_a, shape_mask] : kMaskShapes) {
    SCOPED_TRACE(format_shape(shape_a) + " under " + format_shape(shape_mask));
    const Mask mask = random_fill_mask(shape_mask, 307);
    EXPECT_TRUE(passes_gradcheck([mask](const Inputs& x) { return masked_fill(x[0], mask, x[1]); },
                                 {random_tensor(shape_a, 308), random_tensor({}, 309)}));
  }
}

TEST(MaskedFill, NonZeroDTensorValueThrowsNamingItsShape) {
  const auto a = random_tensor({2, 3}, 310);
  const Mask mask = Mask::from_shape({2, 3});
  EXPECT_TRUE(throws_with<ShapeError>([&] { masked_fill(a, mask, Tensor<double>::zeros({1})); },
                                      {"masked_fill", "value", "0-d", "[1]", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { masked_fill(a, mask, Tensor<double>()); }, {"masked_fill", "'value'", "undefined"}));
}

TEST(Dropout, ZeroesAboutPAndScalesTheRest) {
  // 10^5 draws: the zero fraction has standard deviation sqrt(p(1-p)/n) ~ 0.0015 around p.
  for (const double p : {0.1, 0.3, 0.75}) {
    SCOPED_TRACE(p);
    Generator gen(400);
    const auto x = Tensor<float>::uniform({200, 500}, gen, 0.5f, 1.5f);  // never 0, so 0 means dropped
    const auto y = dropout(x, p, true, gen);
    const float scale = static_cast<float>(1.0 / (1.0 - p));
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < x.numel(); ++i) {
      const float v = y.value().data()[i];
      if (v == 0.0f) {
        ++zeros;
      } else {
        ASSERT_EQ(v, x.value().data()[i] * scale);
      }
    }
    EXPECT_NEAR(double(zeros) / double(x.numel()), p, 0.01);
  }
}

TEST(Dropout, GradientIsTheKeepMaskTimesScale) {
  // The mask is kept 8 elements a byte, 64 a task chunk: sizes with a partial chunk, a partial
  // byte, and a single element.
  for (const Shape& shape : {Shape{30, 40}, Shape{7, 13}, Shape{1}}) {
    SCOPED_TRACE(format_shape(shape));
    Generator gen(401);
    const auto x = random_tensor(shape, 402, true, 0.5, 1.5);
    GradientTape tape;
    const auto y = dropout(x, 0.5, true, gen);
    tape.backward(y, xt::xarray<double>(xt::ones<double>(x.shape())));
    for (std::size_t i = 0; i < x.numel(); ++i) {
      EXPECT_EQ(x.grad().data()[i], y.value().data()[i] == 0.0 ? 0.0 : 2.0) << i;
    }
  }
}

// An element is kept when its uniform draw u (a float) is at least p (a double), compared
// exactly: with p just above a draw, that draw is dropped even though p rounds down to it as a
// float.
template <class T>
void check_keeps_exactly_the_draws_at_least_p() {
  const std::size_t n = 999;
  std::vector<float> u(n);
  Generator(411).fill_uniform(u.data(), n);
  const std::size_t k = 500;
  ASSERT_GT(u[k], 0.0f);
  for (const double p : {static_cast<double>(u[k]) + 1e-12, static_cast<double>(u[k]) - 1e-12}) {
    SCOPED_TRACE(p);
    ASSERT_EQ(static_cast<float>(p), u[k]);  // the two cases differ only below float precision
    Generator gen(411);
    const auto y = dropout(Tensor<T>(xt::xarray<T>(xt::ones<T>({n}))), p, true, gen);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y.value()(i) != T(0), static_cast<double>(u[i]) >= p) << i;
  }
}

TEST(Dropout, KeepsExactlyTheDrawsAtLeastP) {
  check_keeps_exactly_the_draws_at_least_p<float>();
  check_keeps_exactly_the_draws_at_least_p<double>();
}

TEST(Dropout, IdentityInEvalAndAtPZeroWithoutDrawing) {
  const auto x = random_tensor({3, 4}, 403);
  for (const auto& [p, training] : std::vector<std::pair<double, bool>>{{0.5, false}, {0.0, true}, {0.0, false}}) {
    SCOPED_TRACE(std::to_string(p) + (training ? " training" : " eval"));
    Generator gen(404);
    x.node()->clear_grad();
    GradientTape tape;
    const auto y = dropout(x, p, training, gen);
    EXPECT_EQ(y.value(), x.value());
    EXPECT_FALSE(y.same_node(x));
    EXPECT_EQ(gen.offset(), 0u);
    const xt::xarray<double> g = random_tensor({3, 4}, 405, false).value();
    tape.backward(y, g);
    EXPECT_EQ(x.grad(), g);
  }
}

TEST(Dropout, SameGeneratorStateGivesSameMask) {
  const auto x = random_tensor({50, 20}, 406, false, 0.5, 1.5);
  Generator a(407), b(407), c(408);
  const auto ya = dropout(x, 0.4, true, a);
  EXPECT_EQ(ya.value(), dropout(x, 0.4, true, b).value());
  EXPECT_NE(ya.value(), dropout(x, 0.4, true, c).value());
  EXPECT_NE(ya.value(), dropout(x, 0.4, true, a).value());  // the generator moved on
  EXPECT_EQ(a.offset(), b.offset() * 2);
}

// The fill value is a Scalar<T>: any arithmetic argument converts to the tensor's type, as for
// mul(x, 2.0), instead of failing template deduction (-INFINITY is a float).
TEST(MaskedFill, TheFillValueConvertsToTheTensorsType) {
  const Mask mask{true, false};
  const Tensor<double> x(xt::xarray<double>{1.0, 2.0});
  EXPECT_EQ(masked_fill(x, mask, -INFINITY).value(), (xt::xarray<double>{-INFINITY, 2.0}));
  const Tensor<float> y(xt::xarray<float>{1.0f, 2.0f});
  EXPECT_EQ(masked_fill(y, mask, 0.5).value(), (xt::xarray<float>{0.5f, 2.0f}));
  EXPECT_EQ(attention_softmax(y, std::nullopt, 0.0).value(), (xt::xarray<float>{0.5f, 0.5f}));
}

TEST(Dropout, FloatAndDoubleDropTheSameElements) {
  const auto x = random_tensor({50, 20}, 409, false, 0.5, 1.5);  // no element is 0
  Generator for_double(410), for_float(410);
  const xt::xarray<double> kept_double = xt::not_equal(dropout(x, 0.3, true, for_double).value(), 0.0);
  const xt::xarray<double> kept_float = xt::not_equal(dropout(x.to<float>(), 0.3, true, for_float).value(), 0.0f);
  EXPECT_EQ(kept_double, kept_float);
  EXPECT_GT(xt::sum(kept_double)(), 600.0);
  EXPECT_LT(xt::sum(kept_double)(), 800.0);
}

TEST(Dropout, Gradcheck) {
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training);
    // A fresh generator per call: every evaluation draws the same mask.
    EXPECT_TRUE(passes_gradcheck(
        [training](const Inputs& x) {
          Generator gen(409);
          return dropout(x[0], 0.4, training, gen);
        },
        {random_tensor({3, 4}, 410)}));
  }
}

TEST(Dropout, POneZeroesEverythingInTrainingWithZeroGradientAndIsIdentityInEval) {
  // torch.nn.functional.dropout(x, 1.0, True) is zeros with a zero gradient; in eval, x.
  const auto x = random_tensor({2, 3}, 413);
  Generator gen(414);
  const Generator before = gen;
  GradientTape tape;
  const Tensor<double> y = dropout(x, 1.0, true, gen);
  EXPECT_EQ(y.value(), (xt::zeros<double>({2, 3})));
  tape.backward(sum(y));
  EXPECT_EQ(x.grad(), (xt::zeros<double>({2, 3})));
  EXPECT_EQ(gen.next_u64(), Generator(before).next_u64());  // nothing was drawn
  EXPECT_EQ(dropout(x, 1.0, false, gen).value(), x.value());
  EXPECT_TRUE(passes_gradcheck([&gen](const Inputs& in) { return dropout(in[0], 1.0, true, gen); }, {x}));
}

// A batch split over two processes, each taking its rows' part of the whole batch's mask: the
// parts joined are the whole batch's dropout, values and gradients, and both generators end
// where the whole batch's does. Rows of 4 x 5 = 20 floats: parts start inside Philox blocks.
template <class T>
void check_split_batch_dropout() {
  const Tensor<T> x(xt::xarray<T>(random_tensor({7, 4, 5}, 415, false, 0.5, 1.5).to<T>().value()), true);
  Generator whole_gen(416);
  GradientTape whole_tape;
  const Tensor<T> whole = dropout(x, 0.3, true, whole_gen);
  whole_tape.backward(sum(whole * whole));
  const xt::xarray<T> whole_grad = x.grad();
  for (const std::size_t split : {std::size_t{3}, std::size_t{1}, std::size_t{6}}) {
    SCOPED_TRACE(split);
    Generator gen_a(416), gen_b(416);
    const auto a = Tensor<T>(xt::xarray<T>(xt::view(x.value(), xt::range(0, split))), true);
    const auto b = Tensor<T>(xt::xarray<T>(xt::view(x.value(), xt::range(split, 7))), true);
    GradientTape tape;
    const Tensor<T> ya = dropout(a, 0.3, true, gen_a, BatchRows{0, 7});
    const Tensor<T> yb = dropout(b, 0.3, true, gen_b, BatchRows{split, 7});
    tape.backward(sum(ya * ya) + sum(yb * yb));
    EXPECT_EQ(xt::xarray<T>(xt::concatenate(xt::xtuple(ya.value(), yb.value()), 0)), whole.value());
    EXPECT_EQ(xt::xarray<T>(xt::concatenate(xt::xtuple(a.grad(), b.grad()), 0)), whole_grad);
    EXPECT_EQ(gen_a.offset(), whole_gen.offset());
    EXPECT_EQ(gen_b.offset(), whole_gen.offset());
  }
}

TEST(Dropout, ABatchSplitByRowsDropsWhatTheWholeBatchWould) {
  check_split_batch_dropout<float>();
  check_split_batch_dropout<double>();
  const auto x = random_tensor({3, 2}, 417);
  Generator gen(418);
  EXPECT_TRUE(throws_with<ShapeError>([&] { dropout(x, 0.5, true, gen, BatchRows{5, 7}); },
                                      {"dropout", "[3,2]", "3 rows from row 5", "batch of 7 rows"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { dropout(random_tensor({}, 419), 0.5, true, gen, BatchRows{0, 1}); },
                                      {"dropout", "no batch axis"}));
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2 + 1;  // 2 x huge overflows
  EXPECT_TRUE(throws_with<ShapeError>([&] { dropout(x, 0.5, true, gen, BatchRows{0, huge}); },
                                      {"dropout", "rows of 2 elements", "more elements than size_t can count"}));
  EXPECT_EQ(gen.offset(), 0u);
}

TEST(Dropout, BadProbabilityThrowsNamingP) {
  const auto x = random_tensor({2, 3}, 411);
  Generator gen(412);
  for (const double p : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    SCOPED_TRACE(p);
    EXPECT_TRUE(throws_with<ValueError>([&] { dropout(x, p, true, gen); }, {"dropout", "[0, 1]", "p = "}));
    EXPECT_TRUE(throws_with<ValueError>([&] { dropout(x, p, false, gen); }, {"dropout", "[0, 1]", "p = "}));
  }
  EXPECT_TRUE(throws_with<ValueError>([&] { dropout(Tensor<double>(), 0.1, true, gen); }, {"dropout", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// Rows 0 and 2 in part, row 1 fully masked.
const Mask kRowMask{{false, true, false, false}, {true, true, true, true}, {false, false, false, true}};
const Mask kMask{{true, false, false}, {false, true, false}};
// A uint8 fill mask (nonzero = fill), broadcast over rows. masked_fill takes no uint8 mask (its
// overload is deleted): the polarity is spelled out, as masking.h says to.
const Mask kByteMask(xt::not_equal(xt::xarray<std::uint8_t>{0, 3, 0, 1}, std::uint8_t{0}));

// masked_fill and dropout are linear where differentiable: composed with a product so the second
// derivative is not zero.
TAPEGRAD_OP_SPEC(masked_fill) {
  OpSpec s("masked_fill", "masking");
  s.remark = "a scalar or 0-d tensor value";
  s.samples = {
      // masked_fill: full-size and broadcast masks, one made from bytes, a finite fill value.
      {"masked_fill_times_input", [](const auto& x) { return mul(masked_fill(x[0], kRowMask, 0.5), x[0]); },
       [] { return V{leaf({3, 4}, 335)}; }},
      OpCase("masked_fill_broadcast_of_square",
       [](const auto& x) { return masked_fill(mul(x[0], x[0]), Mask{{true, false, true}}, -2.0); },
       [] { return V{leaf({2, 4, 3}, 336)}; }).at_scale([] { return V{leaf({200, 101, 3}, 913)}; }),
      {"masked_fill_bytes_as_fill_mask_times_other",
       [](const auto& x) { return mul(masked_fill(x[0], kByteMask, 1.0), x[1]); },
       [] { return V{leaf({2, 4}, 337), leaf({2, 4}, 338)}; }},
      // masked_fill with a 0-d tensor value: its gradient, and an input broadcast up to the mask.
      OpCase("masked_fill_tensor_value_times_input",
       [](const auto& x) { return mul(masked_fill(x[0], Mask{{true, false, true}}, x[1]), x[0]); },
       [] { return V{leaf({2, 4, 3}, 341), leaf({}, 342)}; }).at_scale([] { return V{leaf({200, 101, 3}, 915), leaf({}, 916)}; }),
      {"masked_fill_tensor_value_broadcast_input_of_product",
       [](const auto& x) { return masked_fill(x[0], Mask{{true, false, true}, {false, true, true}}, mul(x[1], x[1])); },
       [] { return V{leaf({3}, 343), leaf({}, 344)}; }},
      {"masked_fill_input_broadcast_to_mask",
       [](const auto& x) { return mul(masked_fill(x[0], kMask, scalar_of(x, 0.5)), x[1]); },
       [] { return V{leaf({3}, 712), leaf({2, 3}, 713)}; }},
      {"masked_fill_both_broadcast",
       [](const auto& x) { return mul(masked_fill(x[0], Mask{true, false, true}, scalar_of(x, -1.0)), x[0]); },
       [] { return V{leaf({2, 1}, 714)}; }},
  };
  s.errors = {
      error_input<ShapeError>("masked_fill_mask_does_not_broadcast", "`masked_fill`", "mask [2] for [2,3]",
                  [] { return masked_fill(bad_inputs::zeros({2, 3}), bad_inputs::mask_of({2}), 0.0); },
                  {"masked_fill", "[2]", "[2,3]"}),
      error_input<ShapeError>("masked_fill_input_and_mask_do_not_broadcast", "`masked_fill`", "input [3], mask [2,2] (an input broadcast up to the mask is fine)",
                  [] { return masked_fill(bad_inputs::zeros({3}), bad_inputs::mask_of({2, 2}), 0.0); },
                  {"masked_fill", "[3]", "[2,2]"}),
      error_input<ValueError>("masked_fill_undefined", "`masked_fill`", "undefined a",
                  [] { return masked_fill(bad_inputs::undefined(), bad_inputs::mask_of({2}), 0.0); },
                  {"masked_fill", "'a'", "undefined"}),
      error_input<ShapeError>("masked_fill_value_not_0d", "`masked_fill(a, mask, value)`", "a [1] value tensor (PyTorch also takes only 0-d)",
                  [] { return masked_fill(bad_inputs::zeros({2, 3}), Mask::from_shape({2, 3}), bad_inputs::zeros({1})); },
                  {"masked_fill", "value", "0-d", "[1]", "[2,3]"}),
      error_input<ValueError>("masked_fill_undefined_value", "`masked_fill(a, mask, value)`", "undefined value tensor",
                  [] { return masked_fill(bad_inputs::zeros({2, 3}), Mask::from_shape({2, 3}), bad_inputs::undefined()); },
                  {"masked_fill", "'value'", "undefined"}),
  };
  s.pytorch = {
      {"masked_fill",
       [](Call& c) -> Outputs {
         const T x = c.tensor(c.input());
         const Value& value = c.arg(1);
         if (value.kind == Value::Kind::tensor) return {masked_fill(x, c.mask(c.arg(0)), c.tensor(value))};
         return {masked_fill(x, c.mask(c.arg(0)), c.number(value))};
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(dropout) {
  OpSpec s("dropout", "masking");
  s.samples = {
      // dropout: the generator is reseeded on every call, so every call drops the same elements.
      OpCase("dropout_training_of_square",
       [](const auto& x) {
         Generator gen(339);  // drops 7 of the 20
         return dropout(mul(x[0], x[0]), 0.4, true, gen);
       },
       [] { return V{leaf({4, 5}, 340)}; }).at_scale([] { return V{leaf({211, 300}, 914)}; }),
      {"dropout_training_times_input",
       [](const auto& x) {
         Generator gen(348);  // drops 2 of the 9
         return mul(dropout(x[0], 0.25, true, gen), x[0]);
       },
       [] { return V{leaf({3, 3}, 342)}; }},
      {"dropout_eval_times_input",
       [](const auto& x) {
         Generator gen(343);
         return mul(dropout(x[0], 0.5, false, gen), x[0]);
       },
       [] { return V{leaf({2, 3}, 344)}; }},
      {"dropout_p_one_training",
       [](const auto& x) {
         Generator gen(710);  // p = 1 draws nothing
         return add(dropout(mul(x[0], x[0]), 1.0, true, gen), mul(x[0], x[0]));
       },
       [] { return V{leaf({2, 3}, 711)}; }},
  };
  s.errors = {
      error_input<ValueError>("dropout_p_above_one", "`dropout`", "p 1.5 (p 1 is allowed: zeros)",
                  [] { return dropout(bad_inputs::zeros({2}), 1.5, true, bad_inputs::gen()); },
                  {"dropout", "[0, 1]", "1.5"}),
      error_input<ValueError>("dropout_negative_p", "`dropout`", "p -0.1",
                  [] { return dropout(bad_inputs::zeros({2}), -0.1, true, bad_inputs::gen()); },
                  {"dropout", "p", "-0.1"}),
      error_input<ValueError>("dropout_nan_p", "`dropout`", "p NaN (even in eval)",
                  [] { return dropout(bad_inputs::zeros({2}), bad_inputs::nan, false, bad_inputs::gen()); },
                  {"dropout", "p", "nan"}),
      error_input<ValueError>("dropout_undefined", "`dropout`", "undefined a",
                  [] { return dropout(bad_inputs::undefined(), 0.5, true, bad_inputs::gen()); },
                  {"dropout", "'a'", "undefined"}),
  };
  s.pytorch = {
      {"nn.functional.dropout",
       [](Call& c) -> Outputs {
         const Value* p = c.kwarg("p");
         const Value* training = c.kwarg("training");
         Generator gen(0);
         return {dropout(c.tensor(c.input()), p ? c.number(*p) : 0.5, training ? c.boolean(*training) : true, gen)};
       }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
