// logsumexp, var and std (autograd/ops/statistics.h): values and gradients against numbers worked
// out by hand and checked against PyTorch 1.13, including its edge cases (infinite rows, n <=
// correction, zero variance); gradcheck over axes; bad inputs.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/support/reference.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {

using X = xt::xarray<double>;


X grad_of_sum(GradientTape& tape, const Tensor<double>& y, const Tensor<double>& x) {
  tape.backward(y, X(xt::ones<double>(y.shape())));
  return x.grad();
}


TEST(Logsumexp, InfiniteRowsAsPyTorch) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  // Rows: all -inf, ordinary, holding +inf, -inf beside a finite value.
  const Tensor<double> x(X{{-kInf, -kInf}, {1.0, 2.0}, {kInf, 1.0}, {-kInf, 0.0}}, true);
  const auto y = logsumexp(x, {1});
  expect_same(y.value(), {-kInf, 2.0 + std::log1p(std::exp(-1.0)), kInf, 0.0}, 1e-15);
  // PyTorch 1.13: NaN across the -inf row and at the +inf element, sigmoid(-1), sigmoid(1), 0, 1.
  expect_same(grad_of_sum(tape, y, x), {{kNan, kNan}, {0.2689414213699951, 0.7310585786300049}, {kNan, 0.0}, {0.0, 1.0}},
              1e-15);
}

TEST(Logsumexp, LargeValuesDoNotOverflowAndKeepdims) {
  const Tensor<double> x(X{{1000.0, 1000.0}, {-1000.0, -1000.0}});
  const auto y = logsumexp(x, {-1}, true);
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  expect_same(y.value(), column({1000.0 + std::log(2.0), -1000.0 + std::log(2.0)}), 1e-12);
  // An empty group gives -inf (log of an empty sum).
  expect_same(logsumexp(Tensor<double>::zeros({2, 0}), {1}).value(), {-kInf, -kInf});
}

TEST(Logsumexp, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return logsumexp(x[0], {0, 2}); }, {random_tensor({2, 3, 4}, 71)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return logsumexp(x[0], {1}, true); }, {random_tensor({3, 5}, 72)}));
}

TEST(Var, UnbiasedAndBiasedWithGradients) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  const Tensor<double> x(X{{1.0, 1.0, 1.0}, {1.0, 2.0, 3.0}}, true);
  const auto v = var(x, {1});
  expect_same(v.value(), {0.0, 1.0});
  expect_same(grad_of_sum(tape, v, x), {{0.0, 0.0, 0.0}, {-1.0, 0.0, 1.0}});  // 2 (x - mean) / (n - 1)
  const Tensor<double> x2(X{{1.0, 1.0, 1.0}, {1.0, 2.0, 3.0}}, true);
  const auto biased = var(x2, {1}, 0, true);
  EXPECT_EQ(biased.shape(), (Shape{2, 1}));
  expect_same(biased.value(), column({0.0, 2.0 / 3.0}));
  expect_same(grad_of_sum(tape, biased, x2), {{0.0, 0.0, 0.0}, {-2.0 / 3.0, 0.0, 2.0 / 3.0}});
  // Over all elements: [1,2,3,4] has squared deviations 5, over n - 1 = 3.
  EXPECT_DOUBLE_EQ(var(Tensor<double>(X{{1.0, 2.0}, {3.0, 4.0}})).item(), 5.0 / 3.0);
}

TEST(Var, GroupsNoLargerThanTheCorrectionAsPyTorch) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  // n = correction = 1: 0/0 in the value and 2/0 * 0 in the gradient, NaN both (PyTorch 1.13).
  const Tensor<double> one(column({1.0, 2.0}), true);
  const auto v = var(one, {1});
  expect_same(v.value(), {kNan, kNan});
  expect_same(grad_of_sum(tape, v, one), column({kNan, kNan}));
  // correction 3 for n = 2: the value divides by max(0, -1) = 0 (inf) and the gradient by -1.
  const Tensor<double> two(X{{1.0, 2.0}}, true);
  const auto v3 = var(two, {1}, 3);
  expect_same(v3.value(), {kInf});
  expect_same(grad_of_sum(tape, v3, two), {{1.0, -1.0}});
}

TEST(Std, ZeroVarianceHasZeroGradientAsPyTorch) {
  GradientTape tape(true);  // records every op below; each backward starts at its own output
  const Tensor<double> x(X{{1.0, 1.0, 1.0}, {1.0, 2.0, 3.0}}, true);
  const auto s = std(x, {1});
  expect_same(s.value(), {0.0, 1.0});
  expect_same(grad_of_sum(tape, s, x), {{0.0, 0.0, 0.0}, {-0.5, 0.0, 0.5}});  // constant row: 0, not NaN
  EXPECT_DOUBLE_EQ(std(Tensor<double>(X{{1.0, 2.0}, {3.0, 4.0}})).item(), std::sqrt(5.0 / 3.0));
}

TEST(VarStd, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return var(x[0], {0, 2}); }, {random_tensor({2, 3, 4}, 73)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return var(x[0], {-1}, 0, true); }, {random_tensor({3, 4}, 74)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return std(x[0], {1}); }, {random_tensor({3, 4}, 75)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return std(x[0]); }, {random_tensor({2, 3}, 76)}));
}

TEST(Statistics, BadInputs) {
  const auto x = Tensor<double>::zeros({2, 3});
  EXPECT_TRUE(throws_with<ValueError>([&] { logsumexp(x, {2}); }, {"logsumexp", "axis 2", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { var(x, {0, -2}); }, {"var", "axis 0", "twice"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { std(x, {1}, -1); }, {"std", "correction", "-1", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { var(Tensor<double>()); }, {"var", "'a'", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using V = std::vector<Tensor<double>>;
using bad_inputs::undefined;
using bad_inputs::zeros;
using pytorch_samples::Value;

// torch.var / torch.std: dim (an int, a list, or None for every axis), unbiased (positional or
// keyword) or correction (None: 1), keepdim.
template <class Fn> PyTorchCall variance_like(Fn fn) {
  return [fn](pytorch_samples::Call& c) -> std::vector<Tensor<double>> {
    const Tensor<double> x = c.tensor(c.input());
    Axes axes;  // empty: every axis
    if (const Value* dim = c.kwarg("dim"); dim && dim->kind != Value::Kind::none) axes = c.integers(*dim);
    Index correction = 1;
    if (c.has_arg(0)) correction = c.boolean(c.arg(0)) ? 1 : 0;
    if (const Value* unbiased = c.kwarg("unbiased")) correction = c.boolean(*unbiased) ? 1 : 0;
    if (const Value* v = c.kwarg("correction"); v && v->kind != Value::Kind::none) correction = c.integer(*v);
    const Value* keepdim = c.kwarg("keepdim");
    return {fn(x, axes, correction, keepdim && c.boolean(*keepdim))};
  };
}

// Over one axis, several, all, with keepdims, and of a product (so an input reaches them twice).
TAPEGRAD_OP_SPEC(logsumexp) {
  OpSpec s("logsumexp", "statistics");
  s.samples = {
      OpCase("logsumexp_last_axis", [](const auto& x) { return logsumexp(x[0], {-1}); }, [] { return V{leaf({3, 4}, 1201)}; })
          .at_scale([] { return V{leaf({64, 517}, 1202)}; }),
      {"logsumexp_two_axes_keepdims", [](const auto& x) { return logsumexp(x[0], {0, 2}, true); },
       [] { return V{leaf({2, 3, 4}, 1203)}; }},
      {"logsumexp_of_product", [](const auto& x) { return logsumexp(mul(x[0], x[1]), {0}); },
       [] { return V{leaf({4, 3}, 1204), leaf({3}, 1205)}; }},
  };
  s.errors = {error_input<ValueError>("logsumexp_axis_out_of_range", "`logsumexp`", "axis 2 of [2,3]",
                                      [] { return logsumexp(zeros({2, 3}), {2}); }, {"logsumexp", "axis 2", "[2,3]"})};
  s.pytorch = {{"logsumexp", [](pytorch_samples::Call& c) -> std::vector<Tensor<double>> {
                  const Value* keepdim = c.kwarg("keepdim");
                  const bool keep = c.has_arg(1) ? c.boolean(c.arg(1)) : keepdim && c.boolean(*keepdim);
                  return {logsumexp(c.tensor(c.input()), c.integers(c.arg(0)), keep)};
                }}};
  return s;
}

TAPEGRAD_OP_SPEC(var) {
  OpSpec s("var", "statistics");
  s.samples = {
      OpCase("var_axis_0", [](const auto& x) { return var(x[0], {0}); }, [] { return V{leaf({4, 3}, 1206)}; })
          .at_scale([] { return V{leaf({307, 71}, 1207)}; }),
      {"var_biased_keepdims", [](const auto& x) { return var(x[0], {1, 2}, 0, true); }, [] { return V{leaf({2, 3, 4}, 1208)}; }},
      {"var_all_of_product", [](const auto& x) { return var(mul(x[0], x[1])); }, [] { return V{leaf({2, 3}, 1209), leaf({3}, 1210)}; }},
  };
  s.errors = {error_input<ValueError>("var_axis_named_twice", "`var(a, axes)`", "axes {0, -2} of [2,3]",
                                      [] { return var(zeros({2, 3}), {0, -2}); }, {"var", "axis 0", "twice", "[2,3]"}),
              error_input<ValueError>("var_undefined", "`var`", "undefined a", [] { return var(undefined()); },
                                      {"var", "'a'", "undefined"})};
  s.pytorch = {{"var", variance_like([](const Tensor<double>& x, const Axes& d, Index c, bool k) { return var(x, d, c, k); })}};
  return s;
}

TAPEGRAD_OP_SPEC(std) {
  OpSpec s("std", "statistics");
  s.samples = {
      OpCase("std_last_axis", [](const auto& x) { return std(x[0], {-1}); }, [] { return V{leaf({3, 5}, 1211)}; })
          .at_scale([] { return V{leaf({64, 517}, 1212)}; }),
      {"std_all", [](const auto& x) { return std(x[0]); }, [] { return V{leaf({2, 3}, 1213)}; }},
      {"std_correction_2_of_product", [](const auto& x) { return std(mul(x[0], x[0]), {0}, 2); },
       [] { return V{leaf({4, 2}, 1214)}; }},
  };
  s.errors = {error_input<ValueError>("std_negative_correction", "`std(a, axes, correction)`", "correction -1",
                                      [] { return std(zeros({2, 3}), {1}, -1); }, {"std", "correction", "-1", "[2,3]"})};
  s.pytorch = {{"std", variance_like([](const Tensor<double>& x, const Axes& d, Index c, bool k) { return std(x, d, c, k); })}};
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
