// argmax / argmin (autograd/ops/argmax.h): positions against hand-worked answers (checked with
// PyTorch 1.13): first occurrence at ties, NaN as both extremes, keepdim, 0-d, bad inputs.
#include <cmath>

#include "autograd/ops/argmax.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

const double nan = std::nan("");

// [[1,3,3],[2,nan,nan],[5,5,1]]: ties in rows 0 and 2, NaNs in row 1.
Tensor<double> ties_and_nans() { return Tensor<double>(xt::xarray<double>{{1, 3, 3}, {2, nan, nan}, {5, 5, 1}}); }

TEST(Argmax, OverEverythingTakesTheFirstNan) {
  EXPECT_EQ(argmax(ties_and_nans()), IndexArray(Index{4}));
  EXPECT_EQ(argmin(ties_and_nans()), IndexArray(Index{4}));
  EXPECT_EQ(argmax(Tensor<double>(xt::xarray<double>{{1, 5, 5}, {0, 5, 2}})), IndexArray(Index{1}));
  EXPECT_EQ(argmin(Tensor<double>(xt::xarray<double>{1, -INFINITY, -INFINITY})), IndexArray(Index{1}));
  const IndexArray kept = argmax(ties_and_nans(), std::nullopt, true);
  EXPECT_EQ(kept.shape(), (IndexArray::shape_type{1, 1}));
  EXPECT_EQ(kept(0, 0), 4);
}

TEST(Argmax, AlongADimTakesTheFirstOccurrence) {
  EXPECT_EQ(argmax(ties_and_nans(), 1), (IndexArray{1, 1, 0}));
  EXPECT_EQ(argmin(ties_and_nans(), 1), (IndexArray{0, 1, 2}));
  EXPECT_EQ(argmax(ties_and_nans(), 0, true), (IndexArray{{2, 1, 1}}));
  EXPECT_EQ(argmin(ties_and_nans(), -2), (IndexArray{0, 1, 1}));
  EXPECT_EQ(argmax(Tensor<double>::zeros({0, 2}), 1).shape()[0], 0u);
}

TEST(Argmax, ZeroDim) {
  const Tensor<double> three(xt::xarray<double>(3.0));
  EXPECT_EQ(argmax(three), IndexArray(Index{0}));
  EXPECT_EQ(argmin(three, 0, true), IndexArray(Index{0}));
  EXPECT_EQ(argmax(three, -1).dimension(), 0u);
}

TEST(Argmax, FloatAgrees) {
  const Tensor<float> x(xt::xarray<float>{{0.5f, -1.0f}, {2.0f, 2.0f}});
  EXPECT_EQ(argmax(x), IndexArray(Index{2}));
  EXPECT_EQ(argmin(x, 0), (IndexArray{0, 0}));
}

TEST(Argmax, BadInputsThrow) {
  EXPECT_TRUE(throws_with<ValueError>([] { argmax(Tensor<double>::zeros({0})); }, {"argmax", "[0]", "zero elements"}));
  EXPECT_TRUE(throws_with<ValueError>([] { argmin(Tensor<double>::zeros({2, 0}), 1); },
                                      {"argmin", "axis 1", "[2,0]", "size 0"}));
  EXPECT_TRUE(throws_with<ValueError>([] { argmax(Tensor<double>::zeros({2, 3}), 2); }, {"argmax", "axis 2", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { argmin(Tensor<double>()); }, {"argmin", "'x'", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using bad_inputs::zeros;

// torch.argmax / argmin(input, dim=None, keepdim=False), positional or keywords: the positions as
// numbers.
template <bool largest> std::vector<Tensor<double>> arg_extreme(pytorch_samples::Call& c) {
  const Tensor<double> x = c.tensor(c.input());
  std::optional<Index> dim;
  if (c.has_arg(0)) dim = c.integer(c.arg(0));
  else if (const auto* v = c.kwarg("dim"); v && v->kind != pytorch_samples::Value::Kind::none) dim = c.integer(*v);
  const auto* keepdim = c.kwarg("keepdim");
  const bool keep = c.has_arg(1) ? c.boolean(c.arg(1)) : keepdim && c.boolean(*keepdim);
  const IndexArray at = largest ? argmax(x, dim, keep) : argmin(x, dim, keep);
  return {Tensor<double>(xt::xarray<double>(xt::cast<double>(at)))};
}

// Positions have no gradient: no samples.
TAPEGRAD_OP_SPEC(argmax) {
  OpSpec s("argmax", "argmax");
  s.differentiable = Differentiable::no;
  s.errors = {error_input<ValueError>("argmax_of_empty_tensor", "`argmax`", "an empty x without dim",
                                      [] { return argmax(zeros({0, 3})); }, {"argmax", "[0,3]", "zero elements"}),
              error_input<ValueError>("argmax_dim_out_of_range", "`argmax`", "dim -3 of [2,3]",
                                      [] { return argmax(zeros({2, 3}), -3); }, {"argmax", "axis -3", "[2,3]"})};
  s.pytorch = {{"argmax", arg_extreme<true>}};
  return s;
}

TAPEGRAD_OP_SPEC(argmin) {
  OpSpec s("argmin", "argmax");
  s.differentiable = Differentiable::no;
  s.errors = {error_input<ValueError>("argmin_over_empty_axis", "`argmin`", "dim 1 of [2,0]",
                                      [] { return argmin(zeros({2, 0}), 1); }, {"argmin", "axis 1", "[2,0]", "size 0"})};
  s.pytorch = {{"argmin", arg_extreme<false>}};
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
