// clamp, where and topk (autograd/ops/selection.h): values and gradients against numbers computed by
// hand (and checked against PyTorch 1.13), gradcheck over broadcast shapes, bad inputs.
#include <cmath>
#include <limits>
#include <optional>

#include "autograd/ops/selection.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {

using X = xt::xarray<double>;


Tensor<double> leaf(X values) { return Tensor<double>(std::move(values), true); }

// The gradients of sum(y) with respect to each of xs.
std::vector<X> grads_of_sum(GradientTape& tape, const Tensor<double>& y, const std::vector<Tensor<double>>& xs) {
  tape.backward(y, X(xt::ones<double>(y.shape())));
  std::vector<X> out;
  for (const auto& x : xs) out.push_back(x.grad());
  return out;
}


TEST(Clamp, ScalarBoundsIncludeTheBoundariesInTheGradient) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  const auto x = leaf({-2.0, -1.0, 0.0, 1.0, 2.0, kNan});
  const auto y = clamp(x, -1.0, 1.0);
  expect_same(y.value(), {-1.0, -1.0, 0.0, 1.0, 1.0, kNan});
  expect_same(grads_of_sum(tape, y, {x})[0], {0.0, 1.0, 1.0, 1.0, 0.0, 0.0});
}

TEST(Clamp, OneBoundAndMinAboveMax) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  const auto x = leaf({-2.0, 0.5, 3.0});
  const auto lower = clamp(x, 0.5, std::nullopt);
  expect_same(lower.value(), {0.5, 0.5, 3.0});
  expect_same(grads_of_sum(tape, lower, {x})[0], {0.0, 1.0, 1.0});
  const auto x2 = leaf({-2.0, 0.5, 3.0});
  const auto upper = clamp(x2, std::nullopt, 0.5);
  expect_same(upper.value(), {-2.0, 0.5, 0.5});
  expect_same(grads_of_sum(tape, upper, {x2})[0], {1.0, 1.0, 0.0});
  const auto x3 = leaf({-2.0, 0.5, 3.0});
  const auto crossed = clamp(x3, 1.0, -1.0);  // PyTorch: max everywhere, no gradient
  expect_same(crossed.value(), {-1.0, -1.0, -1.0});
  expect_same(grads_of_sum(tape, crossed, {x3})[0], {0.0, 0.0, 0.0});
}

TEST(Clamp, TensorBoundsRouteEachGradientAsPyTorch) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  // PyTorch 1.13: x grad [0,0,0,0,0,1], min grad 0, max grad [1,1,1,0,0,0] (min > max in the first
  // three; a NaN bound in the next two gives NaN and no gradient; the last has min = x = max).
  const auto x = leaf({-2.0, 0.5, 3.0, 0.5, 1.0, 0.0});
  const auto lo = leaf({1.0, 1.0, 1.0, kNan, 0.0, 0.0});
  const auto hi = leaf({0.0, 0.0, 0.0, 1.0, kNan, 0.0});
  const auto y = clamp(x, lo, hi);
  expect_same(y.value(), {0.0, 0.0, 0.0, kNan, kNan, 0.0});
  const auto g = grads_of_sum(tape, y, {x, lo, hi});
  expect_same(g[0], {0.0, 0.0, 0.0, 0.0, 0.0, 1.0});
  expect_same(g[1], {0.0, 0.0, 0.0, 0.0, 0.0, 0.0});
  expect_same(g[2], {1.0, 1.0, 1.0, 0.0, 0.0, 0.0});
  // Ordinary bounds: min's gradient where x < min, max's where x > max.
  const auto x2 = leaf({-2.0, 0.5, 3.0});
  const auto lo2 = leaf({0.0, 0.0, 0.0});
  const auto hi2 = leaf({1.0, 1.0, 1.0});
  const auto g2 = grads_of_sum(tape, clamp(x2, lo2, hi2), {x2, lo2, hi2});
  expect_same(g2[0], {0.0, 1.0, 0.0});
  expect_same(g2[1], {1.0, 0.0, 0.0});
  expect_same(g2[2], {0.0, 0.0, 1.0});
}

TEST(Clamp, TensorBoundsBroadcastAndSumBack) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  const auto x = leaf({{-2.0, 0.5, 3.0}, {0.2, -0.3, 0.9}});  // [2,3]
  const auto lo = leaf(X(xt::zeros<double>({2, 1})));          // [2,1]
  const auto y = clamp(x, lo, Tensor<double>());
  expect_same(y.value(), {{0.0, 0.5, 3.0}, {0.2, 0.0, 0.9}});
  const auto g = grads_of_sum(tape, y, {x, lo});
  expect_same(g[0], {{0.0, 1.0, 1.0}, {1.0, 0.0, 1.0}});
  expect_same(g[1], X(xt::ones<double>({2, 1})));
}

TEST(Clamp, GradcheckScalarAndTensorBounds) {
  // Inputs away from the bounds: the derivative jumps there.
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return clamp(x[0], -0.5, 0.55); }, {random_tensor({3, 4}, 1)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return clamp(x[0], x[1], x[2]); },
                               {random_tensor({2, 3}, 2), random_tensor({3}, 3, true, -1.0, -0.2),
                                random_tensor({2, 1}, 4, true, 0.2, 1.0)}));
}

TEST(Clamp, BadInputs) {
  const auto x = Tensor<double>::zeros({2, 3});
  EXPECT_TRUE(throws_with<ValueError>([&] { clamp(x, std::nullopt, std::nullopt); }, {"clamp", "'min'", "'max'", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { clamp(x, kNan, 1.0); }, {"clamp", "min is nan", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { clamp(x, Tensor<double>(), Tensor<double>()); }, {"clamp", "[2,3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { clamp(x, Tensor<double>::zeros({4}), Tensor<double>()); },
                                      // clamp(x, min, max) with tensor bounds, either None.
      {"clamp", "a [2,3]", "min [4]", "max []"}));
}

TEST(Where, PicksAndRoutesGradientsWithBroadcasting) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  Mask column{true, false};
  column.reshape({2, 1});
  const auto a = leaf({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});  // [2,3]
  const auto b = leaf(X(-1.0));                             // 0-d
  const auto y = tapegrad::where(column, a, b);
  expect_same(y.value(), {{1.0, 2.0, 3.0}, {-1.0, -1.0, -1.0}});
  const auto g = grads_of_sum(tape, y, {a, b});
  expect_same(g[0], {{1.0, 1.0, 1.0}, {0.0, 0.0, 0.0}});
  expect_same(g[1], X(3.0));
  // All three broadcast: [2,1] condition, [3] a, [1,3] b give [2,3].
  const auto a2 = leaf({1.0, 2.0, 3.0});
  const auto b2 = leaf(X{{7.0, 8.0, 9.0}});
  expect_same(tapegrad::where(column, a2, b2).value(), {{1.0, 2.0, 3.0}, {7.0, 8.0, 9.0}});
}

TEST(Where, Gradcheck) {
  Mask mask{{true, false, true}, {false, false, true}};
  EXPECT_TRUE(passes_gradcheck([mask](const Inputs& x) { return tapegrad::where(mask, x[0], x[1]); },
                               {random_tensor({2, 3}, 5), random_tensor({3}, 6)}));
}

TEST(Where, BadInputs) {
  const auto x = Tensor<double>::zeros({2, 3});
  EXPECT_TRUE(throws_with<ShapeError>([&] { tapegrad::where(Mask{true, false}, x, x); },
                                      // OpInfo's where is (a, condition, b).
      {"where", "condition [2]", "a [2,3]", "b [2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { tapegrad::where(Mask{true}, x, Tensor<double>()); }, {"where", "'b'", "undefined"}));
}

// ---- topk ---------------------------------------------------------------------------------------
using IX = IndexArray;

void expect_topk(const ValuesIndices<double>& r, const X& values, const IX& indices) {
  expect_same(r.values.value(), values);
  EXPECT_EQ(r.indices, indices);
}

TEST(TopK, LargestAndSmallestAlongTheLastAxisWithTiesByLowerIndex) {
  const auto x = leaf({{1.0, 5.0, 3.0, 5.0}, {2.0, -1.0, 7.0, 0.0}});
  expect_topk(topk(x, 2), {{5.0, 5.0}, {7.0, 2.0}}, {{1, 3}, {2, 0}});
  expect_topk(topk(x, 2, -1, false), {{1.0, 3.0}, {-1.0, 0.0}}, {{0, 2}, {1, 3}});
  // Three equal values: the two of lowest index (PyTorch's CPU kernel picks indices 1 and 2).
  expect_topk(topk(leaf({2.0, 2.0, 2.0, 1.0}), 2), {2.0, 2.0}, {0, 1});
}

TEST(TopK, AlongAFirstOrNegativeDim) {
  const auto x = leaf({{1.0, 6.0}, {4.0, 2.0}, {3.0, 5.0}});  // [3,2]
  expect_topk(topk(x, 2, 0), {{4.0, 6.0}, {3.0, 5.0}}, {{1, 0}, {2, 2}});
  expect_topk(topk(x, 2, -2), {{4.0, 6.0}, {3.0, 5.0}}, {{1, 0}, {2, 2}});
  expect_topk(topk(x, 2, 1, false), {{1.0, 6.0}, {2.0, 4.0}, {3.0, 5.0}}, {{0, 1}, {1, 0}, {0, 1}});
}

TEST(TopK, UnsortedKeepsTheSelectedElementsInTheirOrder) {
  const auto x = leaf({1.0, 5.0, 3.0, 4.0, 0.0});
  expect_topk(topk(x, 3, 0, true, false), {5.0, 3.0, 4.0}, {1, 2, 3});
  expect_topk(topk(x, 2, 0, false, false), {1.0, 0.0}, {0, 4});
}

TEST(TopK, NaNRanksAboveEveryNumberAsPyTorch) {
  const auto x = leaf({1.0, kNan, 3.0, kNan, 2.0});
  expect_topk(topk(x, 3), {kNan, kNan, 3.0}, {1, 3, 2});
  expect_topk(topk(x, 3, 0, false), {1.0, 2.0, 3.0}, {0, 4, 2});
  expect_topk(topk(x, 5, 0, false), {1.0, 2.0, 3.0, kNan, kNan}, {0, 4, 2, 1, 3});
}

TEST(TopK, ZeroDInputKZeroAndKEqualToTheSize) {
  const auto s = leaf(X(3.0));
  for (Index k : {0, 1}) {
    for (Index dim : {0, -1}) expect_topk(topk(s, k, dim), X(3.0), IX(0));
  }
  const auto x = leaf({{1.0, 3.0, 2.0}, {6.0, 4.0, 5.0}});
  const auto none = topk(x, 0);
  EXPECT_EQ(none.values.shape(), (Shape{2, 0}));
  EXPECT_EQ(none.indices.shape(), (IX::shape_type{2, 0}));
  expect_topk(topk(x, 3), {{3.0, 2.0, 1.0}, {6.0, 5.0, 4.0}}, {{1, 2, 0}, {0, 2, 1}});
  EXPECT_EQ(topk(Tensor<double>::zeros({0, 3}), 2).values.shape(), (Shape{0, 2}));
}

TEST(TopK, GradientGoesToTheSelectedPositions) {
  GradientTape tape(true);
  const auto x = leaf({{1.0, 5.0, 3.0}, {2.0, -1.0, 7.0}});
  const auto y = topk(x, 2).values;  // [[5, 3], [7, 2]] from columns [[1, 2], [2, 0]]
  tape.backward(y, X{{10.0, 20.0}, {30.0, 40.0}});
  expect_same(x.grad(), {{0.0, 10.0, 20.0}, {40.0, 0.0, 30.0}});
}

TEST(TopK, GradcheckOverShapesDimsAndOrders) {
  struct Case {
    Shape shape;
    Index k, dim;
    bool largest, sorted;
  };
  for (const Case& c : {Case{{5}, 3, 0, true, true}, Case{{3, 4}, 2, 1, false, true}, Case{{4, 2, 3}, 3, 0, true, false},
                        Case{{2, 3, 2}, 3, -2, false, false}, Case{{}, 1, -1, true, true}}) {
    EXPECT_TRUE(passes_gradcheck([c](const Inputs& x) { return topk(x[0], c.k, c.dim, c.largest, c.sorted).values; },
                                 {random_tensor(c.shape, 7)}))
        << "shape " << format_shape(c.shape) << " k " << c.k << " dim " << c.dim;
  }
}

TEST(TopK, BadInputs) {
  const auto x = Tensor<double>::zeros({2, 4});
  EXPECT_TRUE(throws_with<ValueError>([&] { topk(x, 5); }, {"topk", "k = 5", "[0, 4]", "dim -1", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { topk(x, -1, 0); }, {"topk", "k = -1", "[0, 2]", "dim 0", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { topk(x, 1, 2); }, {"topk", "axis 2", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { topk(Tensor<double>(X(1.0)), 2); }, {"topk", "k = 2", "[0, 1]", "[]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { topk(Tensor<double>(X(1.0)), 1, 1); }, {"topk", "axis 1", "[-1, 0]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { topk(Tensor<double>(), 1); }, {"topk", "'a'", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// clamp, where and topk pass each element from one input, so they are linear where differentiable:
// composed with a product, so that the second derivative is not zero. Inputs stay away from the
// bounds, where the derivative jumps.

TAPEGRAD_OP_SPEC(clamp) {
  OpSpec s("clamp", "selection");
  s.samples = {
      OpCase("clamp_scalar_bounds_times_input", [](const auto& x) { return mul(clamp(x[0], -0.5, 0.55), x[0]); },
             [] { return V{leaf({3, 4}, 1001)}; })
          .at_scale([] { return V{leaf({5, 97, 131}, 1002)}; }),
      {"clamp_min_only_of_square", [](const auto& x) { return clamp(mul(x[0], x[0]), 0.3, std::nullopt); },
       [] { return V{leaf({2, 5}, 1003)}; }},
      {"clamp_max_only_times_input", [](const auto& x) { return mul(clamp(x[0], std::nullopt, 0.1), x[0]); },
       [] { return V{leaf({4}, 1004)}; }},
      OpCase("clamp_tensor_bounds_broadcast",
             [](const auto& x) { return mul(clamp(x[0], x[1], x[2]), x[0]); },
             [] { return V{leaf({2, 3}, 1005), leaf({3}, 1006, -1.0, -0.3), leaf({2, 1}, 1007, 0.3, 1.0)}; })
          .at_scale([] { return V{leaf({211, 300}, 1008), leaf({300}, 1009, -1.0, -0.3), leaf({211, 1}, 1010, 0.3, 1.0)}; }),
      {"clamp_tensor_min_only_times_min",
       [](const auto& x) {
         using T = ElementOf<decltype(x)>;
         return mul(clamp(x[0], x[1], Tensor<T>()), x[1]);
       },
       [] { return V{leaf({3, 2}, 1011), leaf({3, 1}, 1012)}; }},
  };
  s.errors = {
      error_input<ValueError>("clamp_no_bound", "`clamp(a, min, max)`", "both bounds std::nullopt",
                  [] { return clamp(bad_inputs::zeros({2, 3}), std::nullopt, std::nullopt); },
                  {"clamp", "'min'", "'max'", "[2,3]"}),
      error_input<ValueError>("clamp_nan_bound", "`clamp(a, min, max)`", "min NaN (PyTorch 1.13 treats a NaN bound inconsistently)",
                  [] { return clamp(bad_inputs::zeros({2, 3}), bad_inputs::nan, 1.0); },
                  {"clamp", "min is nan", "[2,3]"}),
      error_input<ValueError>("clamp_tensor_bounds_both_undefined", "`clamp(a, min tensor, max tensor)`", "both bounds undefined tensors",
                  [] { return clamp(bad_inputs::zeros({2, 3}), bad_inputs::undefined(), bad_inputs::undefined()); },
                  {"clamp", "'min'", "'max'", "[2,3]"}),
      error_input<ShapeError>("clamp_tensor_bound_does_not_broadcast", "`clamp(a, min tensor, max tensor)`", "min [4] for a [2,3]",
                  [] { return clamp(bad_inputs::zeros({2, 3}), bad_inputs::zeros({4}), bad_inputs::undefined()); },
                  {"clamp", "a [2,3]", "min [4]"}),
      error_input<ValueError>("clamp_undefined", "`clamp`", "undefined a",
                  [] { return clamp(bad_inputs::undefined(), 0.0, 1.0); },
                  {"clamp", "'a'", "undefined"}),
  };
  s.pytorch = {
      {"clamp",
     [](Call& c) -> Outputs {
       const auto bound = [&c](std::size_t i) {
         return !c.has_arg(i) || c.arg(i).kind == Value::Kind::none ? T() : c.tensor(c.arg(i));
       };
       const T x = c.tensor(c.input());
       return {clamp(x, bound(0), bound(1))};
     }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(where) {
  OpSpec s("where", "selection");
  s.samples = {
      OpCase("where_broadcast_of_products",
             [](const auto& x) {
               Mask condition{true, false, true};  // a column: {{true}, {false}, {true}} is ambiguous to xtensor
               condition.reshape({3, 1});
               return tapegrad::where(condition, mul(x[0], x[0]), mul(x[1], x[0]));
             },
             [] { return V{leaf({3, 4}, 1013), leaf({4}, 1014)}; })
          .at_scale([] { return V{leaf({3, 40001}, 1015), leaf({40001}, 1016)}; }),
      {"where_0d_b_times_a", [](const auto& x) { return mul(tapegrad::where(Mask{true, false, false}, x[0], x[1]), x[0]); },
       [] { return V{leaf({2, 3}, 1017), leaf({}, 1018)}; }},
  };
  s.errors = {
      error_input<ShapeError>("where_condition_does_not_broadcast", "`where(condition, a, b)`", "condition [2], a [2,3], b [3]",
                  [] { return tapegrad::where(bad_inputs::mask_of({2}), bad_inputs::zeros({2, 3}), bad_inputs::zeros({3})); },
                  {"where", "condition [2]", "a [2,3]", "b [3]"}),
      error_input<ValueError>("where_undefined_b", "`where`", "undefined b",
                  [] { return tapegrad::where(bad_inputs::mask_of({2}), bad_inputs::zeros({2}), bad_inputs::undefined()); },
                  {"where", "'b'", "undefined"}),
  };
  s.pytorch = {
      {"where",
     [](Call& c) -> Outputs {
       const T a = c.tensor(c.input());
       return {tapegrad::where(c.mask(c.arg(0)), a, c.tensor(c.arg(1)))};
     }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(topk) {
  OpSpec s("topk", "selection");
  s.samples = {
      // topk: random inputs have no ties, so the selection is stable under gradcheck's steps.
      OpCase("topk_last_axis_times_other", [](const auto& x) { return mul(topk(x[0], 2).values, x[1]); },
             [] { return V{leaf({3, 5}, 1019), leaf({3, 2}, 1020)}; })
          .at_scale([] { return V{leaf({4000, 33}, 1021), leaf({4000, 2}, 1022)}; }),
      {"topk_dim_0_smallest_unsorted_squared",
       [](const auto& x) {
         const auto v = topk(x[0], 2, 0, false, false).values;
         return mul(v, v);
       },
       [] { return V{leaf({4, 2, 3}, 1023)}; }},
      OpCase("topk_middle_axis_all_broadcast",
             [](const auto& x) { return mul(topk(x[0], 3, -2).values, x[1]); },
             [] { return V{leaf({2, 3, 2}, 1024), leaf({2}, 1025)}; })
          .at_scale([] { return V{leaf({50, 40, 30}, 1026), leaf({30}, 1027)}; }),
      {"topk_0d_times_input", [](const auto& x) { return mul(topk(x[0], 1, 0).values, x[0]); },
       [] { return V{leaf({}, 1028)}; }},
  };
  s.errors = {
      error_input<ValueError>("topk_k_above_size", "`topk`", "k 5 along dim -1 of [2,4]",
                  [] { return topk(bad_inputs::zeros({2, 4}), 5); },
                  {"topk", "k = 5", "[0, 4]", "dim -1", "[2,4]"}),
      error_input<ValueError>("topk_negative_k", "`topk`", "k -1 along dim 0 of [2,4]",
                  [] { return topk(bad_inputs::zeros({2, 4}), -1, 0); },
                  {"topk", "k = -1", "[0, 2]", "dim 0", "[2,4]"}),
      error_input<ValueError>("topk_dim_out_of_range", "`topk`", "dim 2 of [2,4]",
                  [] { return topk(bad_inputs::zeros({2, 4}), 1, 2); },
                  {"topk", "axis 2", "[2,4]"}),
      error_input<ValueError>("topk_0d_k_above_one", "`topk`", "k 2 of a 0-d tensor (one element)",
                  [] { return topk(bad_inputs::zeros({}), 2); },
                  {"topk", "k = 2", "[0, 1]", "[]"}),
  };
  s.pytorch = {
      {"topk", topk_row},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
