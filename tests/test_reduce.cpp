#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

#include "autograd/kernels/parallel.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

namespace tapegrad {
namespace {

using Reduction = Tensor<double> (*)(const Tensor<double>&, const Axes&, bool);

struct ReduceCase {
  Shape shape;
  Axes axes;
};

// Axis lists every reduction is checked over: single axes, several, negative, size-1 axes, all.
const std::vector<ReduceCase> kReduceCases = {
    {{5}, {0}},        {{2, 3}, {0}},      {{2, 3}, {1}},         {{2, 3}, {-1}},   {{2, 3}, {0, 1}},
    {{2, 3, 4}, {1}},  {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {-1, -3}}, {{2, 1, 3}, {1}}, {{2, 1, 3}, {2, 0}},
    {{3, 1}, {-2}},    {{1}, {0}},
};

std::vector<bool> mask_of(const Shape& shape, const Axes& axes) {
  std::vector<bool> reduced(shape.size(), false);
  for (const Index a : axes) reduced[static_cast<std::size_t>(a < 0 ? a + static_cast<Index>(shape.size()) : a)] = true;
  return reduced;
}

// Independent reference: visits every input element, finds its output element by dropping (or
// zeroing, with keepdims) its reduced coordinates, and folds it in.
xt::xarray<double> naive_reduce(const xt::xarray<double>& x, const std::vector<bool>& reduced, bool keepdims, double init,
                                const std::function<double(double, double)>& fold) {
  Shape out_shape;
  for (std::size_t d = 0; d < x.dimension(); ++d) {
    if (!reduced[d]) out_shape.push_back(x.shape()[d]);
    else if (keepdims) out_shape.push_back(1);
  }
  xt::xarray<double> out = xt::xarray<double>::from_shape(out_shape);
  out.fill(init);
  for (std::size_t flat = 0; flat < x.size(); ++flat) {
    std::size_t rest = flat, out_flat = 0, out_stride = 1;
    for (std::size_t d = x.dimension(); d-- > 0;) {
      const std::size_t i = rest % x.shape()[d];
      rest /= x.shape()[d];
      if (!reduced[d]) {
        out_flat += i * out_stride;
        out_stride *= x.shape()[d];
      }
    }
    out.data()[out_flat] = fold(out.data()[out_flat], x.data()[flat]);
  }
  return out;
}

std::size_t group_size(const Shape& shape, const std::vector<bool>& reduced) {
  std::size_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) n *= shape[d];
  return n;
}

const auto kAdd = [](double acc, double v) { return acc + v; };
const auto kMax = [](double acc, double v) { return std::max(acc, v); };
constexpr double kLowest = -std::numeric_limits<double>::infinity();

TEST(Reduce, ForwardMatchesNaiveLoopsOverAxes) {
  for (const auto& [shape, axes] : kReduceCases) {
    for (const bool keepdims : {false, true}) {
      SCOPED_TRACE(format_shape(shape) + " axes " + format_shape(Shape(axes.begin(), axes.end())) +
                   (keepdims ? " keepdims" : ""));
      const auto a = random_tensor(shape, 11, false);
      const std::vector<bool> reduced = mask_of(shape, axes);
      const xt::xarray<double> expected_sum = naive_reduce(a.value(), reduced, keepdims, 0.0, kAdd);
      const xt::xarray<double> expected_mean = expected_sum / static_cast<double>(group_size(shape, reduced));
      EXPECT_LT(max_abs_diff(sum(a, axes, keepdims).value(), expected_sum), 1e-12);
      EXPECT_LT(max_abs_diff(mean(a, axes, keepdims).value(), expected_mean), 1e-12);
      EXPECT_EQ(max(a, axes, keepdims).value(), naive_reduce(a.value(), reduced, keepdims, kLowest, kMax));
    }
  }
}

TEST(Reduce, FullReductionsGiveAScalar) {
  for (const Shape& shape : std::vector<Shape>{{}, {4}, {2, 3}, {2, 1, 3}}) {
    SCOPED_TRACE(format_shape(shape));
    const auto a = random_tensor(shape, 12, false);
    const std::vector<bool> all(shape.size(), true);
    const xt::xarray<double> expected_sum = naive_reduce(a.value(), all, false, 0.0, kAdd);
    EXPECT_EQ(sum(a).shape(), Shape{});
    EXPECT_LT(max_abs_diff(sum(a).value(), expected_sum), 1e-12);
    EXPECT_LT(max_abs_diff(mean(a).value(), expected_sum / static_cast<double>(a.numel())), 1e-12);
    EXPECT_EQ(max(a).value(), naive_reduce(a.value(), all, false, kLowest, kMax));
  }
}

TEST(Reduce, HandComputedValues) {
  const Tensor<double> a(xt::xarray<double>{{1.0, -2.0, 3.0}, {4.0, 5.0, -6.0}});
  EXPECT_EQ(sum(a, {0}).value(), (xt::xarray<double>{5.0, 3.0, -3.0}));
  xt::xarray<double> row_sums{2.0, 3.0};
  row_sums.reshape({2, 1});
  EXPECT_EQ(sum(a, {1}, true).value(), row_sums);
  EXPECT_EQ(mean(a, {-1}).value(), (xt::xarray<double>{2.0 / 3.0, 1.0}));
  EXPECT_EQ(max(a, {0}).value(), (xt::xarray<double>{4.0, 5.0, 3.0}));
  EXPECT_DOUBLE_EQ(sum(a).item(), 5.0);
  EXPECT_DOUBLE_EQ(max(a).item(), 5.0);
}

TEST(Reduce, GradcheckOverAxesAndKeepdims) {
  const std::vector<std::pair<const char*, Reduction>> ops = {
      {"sum", [](const Tensor<double>& a, const Axes& axes, bool keep) { return sum(a, axes, keep); }},
      {"mean", [](const Tensor<double>& a, const Axes& axes, bool keep) { return mean(a, axes, keep); }},
      {"max", [](const Tensor<double>& a, const Axes& axes, bool keep) { return max(a, axes, keep); }}};
  for (const auto& [name, op] : ops) {
    for (const auto& [shape, axes] : kReduceCases) {
      for (const bool keepdims : {false, true}) {
        SCOPED_TRACE(std::string(name) + " " + format_shape(shape) + " axes " +
                     format_shape(Shape(axes.begin(), axes.end())) + (keepdims ? " keepdims" : ""));
        // Random values have no ties, so max is differentiable at them.
        EXPECT_TRUE(passes_gradcheck([op = op, axes = axes, keepdims](const Inputs& x) { return op(x[0], axes, keepdims); },
                                     {random_tensor(shape, 13)}));
      }
    }
  }
}

TEST(Reduce, GradcheckFullReductions) {
  for (const Shape& shape : std::vector<Shape>{{}, {4}, {2, 3}, {2, 1, 3}}) {
    SCOPED_TRACE(format_shape(shape));
    const Inputs x = {random_tensor(shape, 14)};
    EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return sum(v[0]); }, x));
    EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return mean(v[0]); }, x));
    EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return max(v[0]); }, x));
  }
}

TEST(Reduce, MaxSplitsGradientEvenlyBetweenTies) {
  // Row 0: two tied maxima; row 1: three; row 2: one.
  const Tensor<double> a(xt::xarray<double>{{1.0, 3.0, 3.0}, {2.0, 2.0, 2.0}, {5.0, 0.0, -1.0}}, true);
  GradientTape tape;
  const auto m = max(a, {1});
  EXPECT_EQ(m.value(), (xt::xarray<double>{3.0, 2.0, 5.0}));
  tape.backward(m, xt::xarray<double>{1.0, 3.0, 2.0});
  const xt::xarray<double> expected{{0.0, 0.5, 0.5}, {1.0, 1.0, 1.0}, {2.0, 0.0, 0.0}};
  EXPECT_EQ(a.grad(), expected);
}

TEST(Reduce, MaxSplitsGradientBetweenTiesOverSeveralAxes) {
  // Over all of axes 0 and 2: the maximum 4 appears three times in group 0 and once in group 1.
  const Tensor<double> a(xt::xarray<double>{{{4.0, 1.0}, {0.0, 2.0}}, {{4.0, 4.0}, {-1.0, 3.0}}}, true);
  GradientTape tape;
  const auto m = max(a, {0, -1}, true);
  xt::xarray<double> expected_max{4.0, 3.0}, seed{3.0, 5.0};
  expected_max.reshape({1, 2, 1});
  seed.reshape({1, 2, 1});
  EXPECT_EQ(m.value(), expected_max);
  tape.backward(m, seed);
  const xt::xarray<double> expected{{{1.0, 0.0}, {0.0, 0.0}}, {{1.0, 1.0}, {0.0, 5.0}}};
  EXPECT_EQ(a.grad(), expected);
}

TEST(Reduce, FullMaxSplitsGradientBetweenTies) {
  const Tensor<double> a(xt::xarray<double>{{4.0, 1.0}, {4.0, 4.0}}, true);
  GradientTape tape;
  tape.backward(max(a));
  const double third = 1.0 / 3.0;
  EXPECT_EQ(a.grad(), (xt::xarray<double>{{third, 0.0}, {third, third}}));
}

TEST(Reduce, FullMinSplitsGradientBetweenTiesAsPyTorch) {
  // PyTorch 1.13: torch.min([3, 1, 1, 2]) = 1, gradient [0, 0.5, 0.5, 0].
  const Tensor<double> a(xt::xarray<double>{3.0, 1.0, 1.0, 2.0}, true);
  GradientTape tape;
  const auto m = min(a);
  EXPECT_EQ(m.shape(), Shape{});
  EXPECT_EQ(m.item(), 1.0);
  tape.backward(m);
  EXPECT_EQ(a.grad(), (xt::xarray<double>{0.0, 0.5, 0.5, 0.0}));
  EXPECT_TRUE(std::isnan(min(Tensor<double>(xt::xarray<double>{1.0, std::nan(""), 0.0})).item()));
  EXPECT_EQ(min(Tensor<double>(xt::xarray<double>(7.0))).item(), 7.0);  // 0-d
  EXPECT_TRUE(throws_with<ValueError>([] { min(Tensor<double>::zeros({2, 0})); }, {"min", "minimum", "zero elements", "[2,0]"}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return min(x[0]); }, {random_tensor({3, 4}, 16)}));
}

TEST(Reduce, MaxPropagatesNaN) {
  const Tensor<double> a(xt::xarray<double>{{1.0, std::nan(""), 3.0}, {1.0, 2.0, 0.0}});
  const auto m = max(a, {1}).value();
  EXPECT_TRUE(std::isnan(m(0)));
  EXPECT_EQ(m(1), 2.0);
}

TEST(Reduce, EmptyAxisListReducesEverythingAsPyTorch113) {
  const auto a = random_tensor({2, 3}, 15);
  EXPECT_EQ(sum(a, {}).value(), sum(a).value());
  EXPECT_EQ(mean(a, {}).value(), mean(a).value());
  EXPECT_EQ(max(a, {}).value(), max(a).value());
  EXPECT_EQ(sum(a, {}, true).shape(), (Shape{1, 1}));  // torch.ones(2, 3).sum([], keepdim=True)
  EXPECT_EQ(max(a, {}, true).value(), max(a, {0, 1}, true).value());
  EXPECT_TRUE(std::isnan(mean(Tensor<double>::zeros({0, 3}), {}).item()));
  EXPECT_TRUE(throws_with<ValueError>([] { max(Tensor<double>::zeros({0, 3}), {}); }, {"max", "zero elements"}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return sum(x[0], {}); }, {a}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return mean(x[0], {}, true); }, {a}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return max(x[0], {}); }, {a}));
}

TEST(Reduce, ZeroDimTensorTakesAxisZeroOrMinusOne) {
  // torch.tensor(3.).sum(0), .mean(-1), .amax(0, keepdim=True): all 3., shape [], gradient 1.
  for (const Axes& axes : {Axes{0}, Axes{-1}}) {
    for (const bool keepdims : {false, true}) {
      const Tensor<double> x(xt::xarray<double>(3.0), true);
      GradientTape tape;
      const std::vector<Tensor<double>> outs = {sum(x, axes, keepdims), mean(x, axes, keepdims), max(x, axes, keepdims)};
      for (const auto& y : outs) {
        EXPECT_EQ(y.shape(), Shape{});
        EXPECT_EQ(y.item(), 3.0);
      }
      tape.backward(add(add(outs[0], outs[1]), outs[2]));
      EXPECT_EQ(x.grad()(), 3.0);
    }
  }
  const Tensor<double> x(xt::xarray<double>(3.0));
  EXPECT_TRUE(throws_with<ValueError>([&] { sum(x, {1}); }, {"sum", "axis 1", "[-1, 0]", "[]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { max(x, {-2}); }, {"max", "axis -2", "[-1, 0]", "[]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { mean(x, {0, -1}); }, {"mean", "axis 0", "twice", "[]"}));
}

// torch.max(x, 1) / torch.min(x, 1) of this matrix, values, indices and gradient (PyTorch 1.13):
// ties go to the first index, the first NaN wins, -0. and 0. tie.
TEST(MaxAlongDim, ValuesIndicesAndGradientMatchPyTorch) {
  const double nan = std::nan("");
  const xt::xarray<double> m{{1.0, 3.0, 3.0, 0.0}, {2.0, 2.0, 2.0, 2.0}, {1.0, nan, 5.0, nan}, {-0.0, 0.0, -1.0, 0.0}};
  const Tensor<double> g(xt::xarray<double>{1.0, 2.0, 3.0, 4.0});
  {
    const Tensor<double> x(m, true);
    GradientTape tape;
    const auto [values, indices] = max(x, 1);
    EXPECT_EQ(indices, (IndexArray{1, 0, 1, 0}));
    EXPECT_EQ(values.value()(0), 3.0);
    EXPECT_EQ(values.value()(1), 2.0);
    EXPECT_TRUE(std::isnan(values.value()(2)));
    EXPECT_TRUE(std::signbit(values.value()(3)));  // -0., the first of the tie
    tape.backward(sum(mul(values, g)));
    EXPECT_EQ(x.grad(), (xt::xarray<double>{{0, 1, 0, 0}, {2, 0, 0, 0}, {0, 3, 0, 0}, {4, 0, 0, 0}}));
  }
  {
    const Tensor<double> x(m, true);
    GradientTape tape;
    const auto [values, indices] = min(x, -1);
    EXPECT_EQ(indices, (IndexArray{3, 0, 1, 2}));
    EXPECT_EQ(values.value()(3), -1.0);
    tape.backward(sum(mul(values, g)));
    EXPECT_EQ(x.grad(), (xt::xarray<double>{{0, 0, 0, 1}, {2, 0, 0, 0}, {0, 3, 0, 0}, {0, 0, 4, 0}}));
  }
  // Along dim 0, keepdim: torch.max(x, 0, keepdim=True).indices is [[1, 2, 2, 2]].
  const auto [values, indices] = max(Tensor<double>(m), 0, true);
  EXPECT_EQ(values.shape(), (Shape{1, 4}));
  EXPECT_EQ(indices, (IndexArray{{1, 2, 2, 2}}));
  EXPECT_EQ(min(Tensor<double>(m), 0, true).indices, (IndexArray{{3, 2, 3, 2}}));
  // A tie across a long lane (more than one SIMD batch) still goes to the first index.
  xt::xarray<double> z = xt::zeros<double>({100});
  z(10) = z(50) = z(90) = 1.0;
  EXPECT_EQ(max(Tensor<double>(z), 0).indices(), 10);
  EXPECT_EQ(min(Tensor<double>(z), 0).indices(), 0);
}

TEST(MaxAlongDim, ShapesZeroDimAndGradcheck) {
  const auto a = random_tensor({2, 3, 4}, 17);
  EXPECT_EQ(max(a, 1).values.shape(), (Shape{2, 4}));
  EXPECT_EQ(max(a, 1, true).indices.shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(min(Tensor<double>::zeros({0, 2}), 1).values.shape(), Shape{0});  // no lanes: nothing to pick
  const Tensor<double> s(xt::xarray<double>(3.0), true);
  const auto [v, i] = max(s, -1, true);  // torch.tensor(3.).max(-1, keepdim=True): (3., 0)
  EXPECT_EQ(v.shape(), Shape{});
  EXPECT_EQ(v.item(), 3.0);
  EXPECT_EQ(i.dimension(), 0u);
  EXPECT_EQ(i(), 0);
  // A braced list still means the axes overload (amax, a Tensor).
  static_assert(std::is_same_v<decltype(max(a, {1})), Tensor<double>>);
  for (const Index dim : {0, 1, 2, -1}) {
    SCOPED_TRACE(dim);
    EXPECT_TRUE(passes_gradcheck([dim](const Inputs& x) { return max(x[0], dim).values; }, {a}));
    EXPECT_TRUE(passes_gradcheck([dim](const Inputs& x) { return min(x[0], dim, true).values; }, {a}));
  }
}

TEST(MaxAlongDim, BadDimOrEmptyAxisThrows) {
  EXPECT_TRUE(throws_with<ValueError>([] { max(Tensor<double>::zeros({2, 3}), 2); }, {"max", "axis 2", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { min(Tensor<double>::zeros({}), 1); }, {"min", "axis 1", "[-1, 0]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { max(Tensor<double>::zeros({2, 0}), 1); }, {"max", "axis 1", "[2,0]", "size 0"}));
  EXPECT_TRUE(throws_with<ValueError>([] { min(Tensor<double>(), 0); }, {"min", "'a'", "undefined"}));
}

TEST(Reduce, EmptyGroupsFollowPyTorch) {
  const auto a = Tensor<double>::zeros({2, 0});
  EXPECT_EQ(sum(a, {1}).value(), (xt::xarray<double>{0.0, 0.0}));
  EXPECT_TRUE(std::isnan(mean(a, {1}).value()(0)));
  EXPECT_EQ(sum(a, {0}).shape(), Shape{0});
  EXPECT_EQ(max(a, {0}).shape(), Shape{0});  // zero groups of two elements: nothing to reduce
  EXPECT_TRUE(throws_with<ValueError>([&] { max(a, {1}); }, {"max", "zero elements", "[2,0]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { max(a); }, {"max", "zero elements", "[2,0]"}));
}

TEST(Reduce, FloatSumsAccumulatePrecisely) {
  // 100000 x 0.1f summed in float drifts by about 1; the double accumulator stays within rounding.
  const Tensor<float> a = Tensor<float>::full({100000}, 0.1f);
  EXPECT_NEAR(sum(a).item(), 100000.0 * static_cast<double>(0.1f), 1e-2);
  EXPECT_NEAR(mean(a, {0}).item(), static_cast<double>(0.1f), 1e-7);
}

TEST(Reduce, SameBitsAtAnyThreadCount) {
  const testing_support::ThreadCountTest thread_count_test;
  const auto a = random_tensor({300, 200}, 16, false);
  set_num_threads(1);
  const xt::xarray<double> one = sum(a, {0}).value(), one_max = max(a, {1}).value();
  set_num_threads(0);  // all cores
  EXPECT_EQ(sum(a, {0}).value(), one);
  EXPECT_EQ(max(a, {1}).value(), one_max);
}

TEST(Reduce, RepeatedAxisThrowsNamingOpAndShape) {
  const auto a = random_tensor({2, 3}, 17);
  EXPECT_TRUE(throws_with<ValueError>([&] { sum(a, {1, -1}); }, {"sum", "axis 1", "named twice", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { mean(a, {0, 0}); }, {"mean", "axis 0", "named twice", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { max(a, {-2, 0}, true); }, {"max", "axis 0", "named twice", "[2,3]"}));
}

TEST(Reduce, OutOfRangeAxisThrowsNamingOpAndShape) {
  const auto a = random_tensor({2, 3}, 18);
  EXPECT_TRUE(throws_with<ValueError>([&] { sum(a, {2}); }, {"sum", "axis 2", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { mean(a, {0, -3}); }, {"mean", "axis -3", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { max(a, {5}); }, {"max", "axis 5", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { sum(Tensor<double>::ones({}), {1}); }, {"sum", "axis 1", "[]"}));
}

TEST(Reduce, UndefinedInputThrowsNamingOp) {
  EXPECT_TRUE(throws_with<ValueError>([] { sum(Tensor<double>()); }, {"sum", "undefined"}));
  EXPECT_TRUE(throws_with<ValueError>([] { mean(Tensor<double>(), {0}); }, {"mean", "undefined"}));
  EXPECT_TRUE(throws_with<ValueError>([] { max(Tensor<double>()); }, {"max", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// A reduction of a linear op has a zero second derivative; squaring first (or multiplying by an
// input) gives each sample a non-zero one, so gradgradcheck has something to check. Axis 0 / -1
// of 0-d tensors and empty axis lists too; max / min along a dim stay away from ties.
TAPEGRAD_OP_SPEC(sum) {
  OpSpec s("sum", "reduce");
  s.samples = {
      {"sum_all", [](const auto& x) { return sum(mul(x[0], x[0])); }, [] { return V{leaf({2, 3}, 101)}; }},
      OpCase("sum_axes", [](const auto& x) { return sum(mul(x[0], x[0]), {0, 2}); }, [] { return V{leaf({2, 3, 2}, 102)}; }).at_scale([] { return V{leaf({40, 301, 17}, 924)}; }),
      {"sum_keepdims", [](const auto& x) { return mul(sum(x[0], {1}, true), x[0]); }, [] { return V{leaf({3, 4}, 103)}; }},
      {"sum_0d_axis_0", [](const auto& x) { return mul(sum(x[0], {0}), x[0]); }, [] { return V{leaf({}, 701)}; }},
      {"sum_empty_axes_keepdims", [](const auto& x) { return mul(sum(x[0], {}, true), x[0]); },
       [] { return V{leaf({2, 3}, 704)}; }},
  };
  s.errors = {
      error_input<ValueError>("sum_axis_out_of_range", "`sum(a, axes)`", "axis 2 of [2,3]",
                  [] { return sum(bad_inputs::zeros({2, 3}), {2}); },
                  {"sum", "axis 2", "[2,3]"}),
      error_input<ValueError>("sum_axis_named_twice", "`sum(a, axes)`", "axes {1, -1} of [2,3]",
                  [] { return sum(bad_inputs::zeros({2, 3}), {1, -1}); },
                  {"sum", "axis 1", "twice"}),
      error_input<ValueError>("sum_axis_1_of_0d", "`sum(a, axes)`", "axis 1 of a 0-d tensor (0 and -1 are allowed)",
                  [] { return sum(bad_inputs::zeros({}), {1}); },
                  {"sum", "axis 1", "[-1, 0]", "[]"}),
      error_input<ValueError>("sum_undefined", "`sum`", "undefined a",
                  [] { return sum(bad_inputs::undefined()); },
                  {"sum", "'a'", "undefined"}),
  };
  s.pytorch = {
      {"sum", reduction([](const T& x) { return sum(x); }, [](const T& x, const Axes& d, bool k) { return sum(x, d, k); })},
  };
  return s;
}

TAPEGRAD_OP_SPEC(mean) {
  OpSpec s("mean", "reduce");
  s.samples = {
      OpCase("mean_all", [](const auto& x) { return mean(mul(x[0], x[0])); }, [] { return V{leaf({2, 3}, 104)}; }).at_scale([] { return V{leaf({301, 200}, 925)}; }),
      {"mean_axes_keepdims", [](const auto& x) { return mul(mean(x[0], {-1}, true), x[0]); },
       [] { return V{leaf({2, 5}, 105)}; }},
      {"mean_0d_axis_minus_1_keepdims", [](const auto& x) { return mul(mean(x[0], {-1}, true), x[0]); },
       [] { return V{leaf({}, 702)}; }},
      {"mean_empty_axes", [](const auto& x) { return mul(mean(x[0], {}), x[0]); }, [] { return V{leaf({2, 3}, 705)}; }},
  };
  s.errors = {
      error_input<ValueError>("mean_negative_axis_out_of_range", "`mean(a, axes)`", "axis -3 of [2,3]",
                  [] { return mean(bad_inputs::zeros({2, 3}), {-3}); },
                  {"mean", "axis -3", "[2,3]"}),
      error_input<ValueError>("mean_axes_of_0d_named_twice", "`mean(a, axes)`", "axes {0, -1} of a 0-d tensor (one position, named twice)",
                  [] { return mean(bad_inputs::zeros({}), {0, -1}); },
                  {"mean", "axis 0", "twice", "[]"}),
  };
  s.pytorch = {
      {"mean", reduction([](const T& x) { return mean(x); }, [](const T& x, const Axes& d, bool k) { return mean(x, d, k); })},
  };
  return s;
}

TAPEGRAD_OP_SPEC(max) {
  OpSpec s("max", "reduce");
  s.samples = {
      {"max_all", [](const auto& x) { return mul(max(x[0]), x[0]); }, [] { return V{leaf({2, 3}, 106)}; }},
      OpCase("max_axes", [](const auto& x) { return mul(max(x[0], {1}, true), x[0]); }, [] { return V{leaf({3, 4}, 107)}; }).at_scale([] { return V{leaf({301, 401}, 926)}; }),
      {"max_0d_axis_0", [](const auto& x) { return mul(max(x[0], {0}), x[0]); }, [] { return V{leaf({}, 703)}; }},
      {"max_empty_axes", [](const auto& x) { return mul(max(x[0], {}), x[0]); }, [] { return V{leaf({3, 2}, 706)}; }},
      {"max_along_dim", [](const auto& x) { return mul(max(x[0], 1).values, x[1]); },
       [] { return V{leaf({3, 4}, 727), leaf({3}, 728)}; }},
      {"max_along_dim_0_keepdim", [](const auto& x) { return mul(max(x[0], 0, true).values, x[0]); },
       [] { return V{leaf({3, 2, 2}, 729)}; }},
  };
  s.errors = {
      error_input<ValueError>("max_of_empty_tensor", "`max(a)`", "a [0,3] tensor",
                  [] { return max(bad_inputs::zeros({0, 3})); },
                  {"max", "zero elements", "[0,3]"}),
      error_input<ValueError>("max_over_empty_axis", "`max(a, axes)`", "axis 1 of [2,0]",
                  [] { return max(bad_inputs::zeros({2, 0}), {1}); },
                  {"max", "zero elements", "[2,0]"}),
      error_input<ValueError>("max_axis_out_of_range", "`max(a, axes, keepdims)`", "axis 1 of [2]",
                  [] { return max(bad_inputs::zeros({2}), {1}, true); },
                  {"max", "axis 1", "[2]"}),
      error_input<ValueError>("max_dim_over_empty_axis", "`max(a, dim)`", "dim 1 of a [2,0] tensor",
                  [] { return max(bad_inputs::zeros({2, 0}), 1); },
                  {"max", "axis 1", "[2,0]", "size 0"}),
  };
  s.pytorch = {
      {"amax", reduction([](const T& x) { return max(x); }, [](const T& x, const Axes& d, bool k) { return max(x, d, k); })},
      {"max.reduction_no_dim", unary([](const T& x) { return max(x); })},
      {"max.reduction_with_dim", extreme_along_dim<true>},
  };
  return s;
}

TAPEGRAD_OP_SPEC(min) {
  OpSpec s("min", "reduce");
  s.samples = {
      OpCase("min_all", [](const auto& x) { return mul(min(x[0]), x[0]); }, [] { return V{leaf({2, 3}, 1401)}; })
          .at_scale([] { return V{leaf({301, 401}, 1402)}; }),
      {"min_along_last_dim_keepdim", [](const auto& x) { return mul(min(x[0], -1, true).values, x[0]); },
       [] { return V{leaf({2, 3, 4}, 730)}; }},
      {"min_0d", [](const auto& x) { return mul(min(x[0], 0).values, x[0]); }, [] { return V{leaf({}, 731)}; }},
  };
  s.errors = {
      error_input<ValueError>("min_dim_out_of_range", "`min(a, dim)`", "dim 2 of a [2,3] tensor",
                  [] { return min(bad_inputs::zeros({2, 3}), 2); },
                  {"min", "axis 2", "[2,3]"}),
      error_input<ValueError>("min_of_empty_tensor", "`min(a)`", "a [0,3] tensor",
                  [] { return min(bad_inputs::zeros({0, 3})); },
                  {"min", "zero elements", "[0,3]"}),
  };
  s.pytorch = {
      {"min.reduction_no_dim", unary([](const T& x) { return min(x); })},
      {"min.reduction_with_dim", extreme_along_dim<false>},
  };
  return s;
}

TAPEGRAD_OP_SPEC(sum_to) {
  OpSpec s("sum_to", "reduce");
  s.no_pytorch = "not yet mapped to OpInfo sum_to_size (x.sum_to_size(*shape))";
  s.errors = {error_input<ShapeError>("sum_to_shape_does_not_broadcast", "`sum_to`", "[4] for a [2,3]",
                                      [] { return sum_to(bad_inputs::zeros({2, 3}), {4}); },
                                      {"sum_to", "[4]", "[2,3]"})};
  s.samples = {
      {"sum_to", [](const auto& x) { return mul(sum_to(x[0], {1, 3}), x[1]); },
       [] { return V{leaf({2, 3}, 108), leaf({1, 3}, 109)}; }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
