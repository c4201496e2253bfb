#include <cstdlib>
#include <limits>
#include <numeric>
#include <tuple>

#include "autograd/core/anomaly.h"
#include "autograd/ops/operators.h"
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


Shape unravel(std::size_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

std::size_t ravel(const Shape& index, const Shape& shape) {
  std::size_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

// Independent references, one output element at a time.
xt::xarray<double> naive_permute(const xt::xarray<double>& x, const std::vector<std::size_t>& perm) {
  const Shape in(x.shape().begin(), x.shape().end());
  Shape out_shape(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) out_shape[i] = in[perm[i]];
  xt::xarray<double> out = xt::xarray<double>::from_shape(out_shape);
  for (std::size_t f = 0; f < out.size(); ++f) {
    const Shape o = unravel(f, out_shape);
    Shape i(in.size());
    for (std::size_t d = 0; d < perm.size(); ++d) i[perm[d]] = o[d];
    out.data()[f] = x.data()[ravel(i, in)];
  }
  return out;
}

xt::xarray<double> naive_expand(const xt::xarray<double>& x, const Shape& out_shape) {
  const Shape in(x.shape().begin(), x.shape().end());
  const std::size_t lead = out_shape.size() - in.size();
  xt::xarray<double> out = xt::xarray<double>::from_shape(out_shape);
  for (std::size_t f = 0; f < out.size(); ++f) {
    const Shape o = unravel(f, out_shape);
    Shape i(in.size());
    for (std::size_t d = 0; d < in.size(); ++d) i[d] = in[d] == 1 ? 0 : o[d + lead];
    out.data()[f] = x.data()[ravel(i, in)];
  }
  return out;
}

// Entries start, start + step, ... (count of them) along axis.
xt::xarray<double> naive_take(const xt::xarray<double>& x, std::size_t axis, const std::vector<std::size_t>& picks) {
  const Shape in(x.shape().begin(), x.shape().end());
  Shape out_shape = in;
  out_shape[axis] = picks.size();
  xt::xarray<double> out = xt::xarray<double>::from_shape(out_shape);
  for (std::size_t f = 0; f < out.size(); ++f) {
    Shape i = unravel(f, out_shape);
    i[axis] = picks[i[axis]];
    out.data()[f] = x.data()[ravel(i, in)];
  }
  return out;
}

std::vector<std::size_t> stepped(std::size_t start, std::size_t count, std::size_t step) {
  std::vector<std::size_t> picks(count);
  for (std::size_t k = 0; k < count; ++k) picks[k] = start + k * step;
  return picks;
}

// ---- reshape / view / unsqueeze / squeeze ----

TEST(ShapeOps, ReshapeInfersOneAxisAndKeepsOrder) {
  const auto a = iota({2, 3});
  EXPECT_EQ(reshape(a, {3, -1}).value(), (xt::xarray<double>{{0, 1}, {2, 3}, {4, 5}}));
  EXPECT_EQ(reshape(a, {-1}).value(), (xt::xarray<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(view(a, {1, -1, 2}).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(reshape(iota({1}), {}).shape(), Shape{});
  EXPECT_EQ(reshape(iota({0, 3}), {3, 0}).shape(), (Shape{3, 0}));
}

TEST(ShapeOps, OutputsNeverAliasTheirInput) {
  auto a = iota({2, 3});
  const auto r = reshape(a, {6});
  const auto s = unsqueeze(a, 0);
  const auto p = permute(a, {0, 1});
  a.mutable_value()(0, 0) = 100.0;
  EXPECT_EQ(r.value()(0), 0.0);
  EXPECT_EQ(s.value()(0, 0, 0), 0.0);
  EXPECT_EQ(p.value()(0, 0), 0.0);
}

// reshape (and view) of a temporary moves its value into the result when nothing else can read
// it any more, without a tape and under one (where only edges reach the node); a value still held
// elsewhere (another handle, or a backward formula that reads it) is copied. Values and gradients
// are those of the copying overload.
TEST(ShapeOps, ReshapeOfATemporaryMovesItsValueWhenNoOneElseCanReadIt) {
  {
    Tensor<double> t = mul(iota({2, 3}), 2.0);
    const double* storage = t.value().data();
    const auto r = view(std::move(t), {3, 2});
    EXPECT_EQ(r.value().data(), storage);
    EXPECT_EQ(r.value(), (xt::xarray<double>{{0, 2}, {4, 6}, {8, 10}}));
    // The handle passed with std::move still answers its shape, but reading its value throws
    // instead of returning an empty array.
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.numel(), 6u);
    EXPECT_EQ(t.size(-1), 3u);
    EXPECT_TRUE(throws_with<TapeError>([&] { (void)t.value(); }, {"Tensor::value", "std::move"}));
    EXPECT_TRUE(throws_with<TapeError>([&] { (void)t.mutable_value(); }, {"mutable_value"}));
    EXPECT_TRUE(throws_with<TapeError>([&] { (void)view(std::move(t), {6}); }, {"Tensor::value", "std::move"}));
  }
  {
    const DetectAnomalyGuard anomaly;  // anomaly mode reads the input when recording: copied
    const auto x = iota({2, 3}, true);
    GradientTape tape;
    Tensor<double> t = mul(x, 2.0);
    const double* storage = t.value().data();
    EXPECT_NE(reshape(std::move(t), {6}).value().data(), storage);
  }
  {
    const auto x = iota({2, 3}, true);
    GradientTape tape;
    Tensor<double> t = mul(x, 2.0);  // mul's backward reads x, not t
    const double* storage = t.value().data();
    const auto r = reshape(std::move(t), {6});
    EXPECT_EQ(r.value().data(), storage);
    tape.backward(sum(mul(r, r)));
    EXPECT_EQ(x.grad(), xt::xarray<double>(8.0 * x.value()));  // d/dx sum((2x)^2)
  }
  {
    Tensor<double> t = mul(iota({2, 3}), 2.0);
    const Tensor<double> kept = t;
    const auto r = reshape(std::move(t), {6});
    EXPECT_NE(r.value().data(), kept.value().data());
    EXPECT_EQ(kept.value()(1, 2), 10.0);
  }
  {
    const auto x = iota({2, 3}, true);
    GradientTape tape;
    Tensor<double> e = exp(x);  // exp's backward reads its output
    const double* storage = e.value().data();
    const auto r = reshape(std::move(e), {6});
    EXPECT_NE(r.value().data(), storage);
    tape.backward(sum(r));
    EXPECT_EQ(x.grad(), xt::xarray<double>(xt::exp(x.value())));
  }
  EXPECT_TRUE(
      passes_gradcheck([](const Inputs& x) { return view(mul(x[0], 3.0), {3, -1}); }, {random_tensor({2, 3}, 37)}));
}

TEST(ShapeOps, UnsqueezeInsertsAtOutputPosition) {
  const auto a = iota({2, 3});
  const std::vector<std::pair<Index, Shape>> cases = {
      {0, {1, 2, 3}}, {1, {2, 1, 3}}, {2, {2, 3, 1}}, {-1, {2, 3, 1}}, {-2, {2, 1, 3}}, {-3, {1, 2, 3}}};
  for (const auto& [axis, shape] : cases) {
    SCOPED_TRACE(axis);
    const auto u = unsqueeze(a, axis);
    EXPECT_EQ(u.shape(), shape);
    EXPECT_TRUE(std::equal(u.value().begin(), u.value().end(), a.value().begin()));
  }
  EXPECT_EQ(unsqueeze(iota({}), -1).shape(), Shape{1});
}

TEST(ShapeOps, SqueezeRemovesSizeOneAxes) {
  const auto a = iota({1, 2, 1, 3});
  EXPECT_EQ(squeeze(a).shape(), (Shape{2, 3}));
  EXPECT_EQ(squeeze(a, 0).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(squeeze(a, -2).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(squeeze(a, 1).shape(), (Shape{1, 2, 1, 3}));  // size 2: unchanged, as PyTorch
  EXPECT_EQ(squeeze(iota({1})).shape(), Shape{});
  EXPECT_EQ(squeeze(a).value(), (xt::xarray<double>{{0, 1, 2}, {3, 4, 5}}));
}

TEST(ShapeOps, GradcheckRenamingOps) {
  const std::vector<std::pair<Shape, std::vector<Index>>> reshapes = {
      {{2, 3}, {3, -1}}, {{2, 1, 3}, {6}}, {{}, {1, 1}}, {{4}, {2, 2}}, {{2, 3}, {-1, 1, 2}}};
  for (const auto& [shape, target] : reshapes) {
    SCOPED_TRACE(format_shape(shape));
    EXPECT_TRUE(passes_gradcheck([t = target](const Inputs& x) { return reshape(x[0], t); }, {random_tensor(shape, 31)}));
    EXPECT_TRUE(passes_gradcheck([t = target](const Inputs& x) { return view(x[0], t); }, {random_tensor(shape, 32)}));
  }
  for (const Index axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    EXPECT_TRUE(passes_gradcheck([axis](const Inputs& x) { return unsqueeze(x[0], axis); }, {random_tensor({2, 3}, 33)}));
  }
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return squeeze(x[0]); }, {random_tensor({1, 2, 1, 3}, 34)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return squeeze(x[0], -2); }, {random_tensor({1, 2, 1, 3}, 35)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return squeeze(x[0], 1); }, {random_tensor({1, 2, 1, 3}, 36)}));
}

TEST(ShapeOps, ReshapeBadShapesThrowNamingBothShapes) {
  const auto a = iota({2, 3});
  EXPECT_TRUE(throws_with<ValueError>([&] { reshape(a, {-1, -1}); }, {"reshape", "only one -1", "[-1,-1]", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { reshape(a, {3, -2}); }, {"reshape", "-2", "[3,-2]", "[2,3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { reshape(a, {4, 2}); }, {"reshape", "[2,3]", "6 elements", "[4,2]", "8 elements"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { reshape(a, {4, -1}); }, {"reshape", "[2,3]", "[4,-1]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { view(a, {0, -1}); }, {"reshape", "[2,3]", "[0,-1]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { reshape(Tensor<double>(), {1}); }, {"reshape", "undefined"}));
}

TEST(ShapeOps, UnsqueezeSqueezeBadAxisThrows) {
  const auto a = iota({2, 3});
  EXPECT_TRUE(throws_with<ValueError>([&] { unsqueeze(a, 3); }, {"unsqueeze", "axis 3", "[-3, 2]", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { unsqueeze(a, -4); }, {"unsqueeze", "axis -4", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { squeeze(a, 2); }, {"squeeze", "axis 2", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { squeeze(a, -3); }, {"squeeze", "axis -3", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { squeeze(iota({}), 1); }, {"squeeze", "axis 1", "[-1, 0]", "[]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { unsqueeze(iota({}), 1); }, {"unsqueeze", "axis 1", "[-1, 0]", "[]"}));
}

// PyTorch lets transpose, squeeze and index_select name axis 0 or -1 of a 0-d tensor (and
// unsqueeze axis -1 or 0): each gives the tensor back, with its gradient.
TEST(ShapeOps, ZeroDimTensorTakesAxisZeroOrMinusOne) {
  const IndexArray zero{0};
  for (const Index axis : {0, -1}) {
    SCOPED_TRACE(axis);
    const Tensor<double> x(xt::xarray<double>(3.0), true);
    GradientTape tape;
    const std::vector<Tensor<double>> outs = {transpose(x, axis, 0), transpose(x, -1, axis), squeeze(x, axis),
                                              index_select(x, axis, zero)};
    for (const auto& y : outs) {
      EXPECT_EQ(y.shape(), Shape{});
      EXPECT_EQ(y.item(), 3.0);
    }
    EXPECT_EQ(unsqueeze(x, axis).shape(), Shape{1});
    tape.backward(add(add(outs[0], outs[1]), add(outs[2], outs[3])));
    EXPECT_EQ(x.grad()(), 4.0);
  }
  const auto a = iota({});
  EXPECT_TRUE(throws_with<ValueError>([&] { transpose(a, 0, 1); }, {"transpose", "axis 1", "[-1, 0]", "[]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { transpose(a, -2, 0); }, {"transpose", "axis -2", "[-1, 0]", "[]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { index_select(a, 1, zero); }, {"index_select", "axis 1", "[]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { index_select(a, 0, IndexArray{1}); },
                                      {"index_select", "0-d", "[0]", "shape [1]", "holding 1"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { index_select(a, 0, IndexArray{0, 0}); },
                                      {"index_select", "0-d", "[0]", "shape [2]"}));
}

// ---- permute / transpose ----

TEST(ShapeOps, PermuteMatchesNaiveCopy) {
  const std::vector<std::pair<Shape, std::vector<Index>>> cases = {
      {{2, 3, 4}, {2, 0, 1}}, {{2, 3, 4}, {1, 0, 2}}, {{2, 3, 4}, {-1, -2, -3}}, {{2, 1, 3, 2}, {3, 1, 0, 2}},
      {{3}, {0}},             {{}, {}},               {{2, 3}, {1, 0}},          {{0, 3}, {1, 0}},
  };
  for (const auto& [shape, dims] : cases) {
    SCOPED_TRACE(format_shape(shape));
    std::vector<std::size_t> perm;
    for (const Index d : dims) perm.push_back(static_cast<std::size_t>(d < 0 ? d + static_cast<Index>(shape.size()) : d));
    const auto a = iota(shape);
    EXPECT_EQ(permute(a, dims).value(), naive_permute(a.value(), perm));
  }
}

TEST(ShapeOps, LargePermuteMatchesNaiveCopy) {
  // Big enough for the copy to run in parallel blocks that start mid-way through the index space.
  const auto a = iota({64, 48, 32});
  EXPECT_EQ(permute(a, {2, 0, 1}).value(), naive_permute(a.value(), {2, 0, 1}));
  EXPECT_EQ(permute(a, {1, 0, 2}).value(), naive_permute(a.value(), {1, 0, 2}));
}

TEST(ShapeOps, TransposeSwapsTwoAxes) {
  const auto a = iota({2, 3});
  EXPECT_EQ(transpose(a, 0, 1).value(), (xt::xarray<double>{{0, 3}, {1, 4}, {2, 5}}));
  const auto b = iota({2, 3, 4});
  EXPECT_EQ(transpose(b, 0, -1).value(), naive_permute(b.value(), {2, 1, 0}));
  EXPECT_EQ(transpose(b, 1, 1).value(), b.value());
}

TEST(ShapeOps, GradcheckPermuteAndTranspose) {
  const std::vector<std::pair<Shape, std::vector<Index>>> cases = {
      {{2, 3, 4}, {2, 0, 1}}, {{2, 3, 4}, {-1, -3, -2}}, {{2, 1, 3}, {1, 2, 0}}, {{3}, {0}}};
  for (const auto& [shape, dims] : cases) {
    SCOPED_TRACE(format_shape(shape));
    EXPECT_TRUE(passes_gradcheck([d = dims](const Inputs& x) { return permute(x[0], d); }, {random_tensor(shape, 41)}));
  }
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return transpose(x[0], 0, 1); }, {random_tensor({2, 3}, 42)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return transpose(x[0], -1, 0); }, {random_tensor({2, 1, 3}, 43)}));
}

TEST(ShapeOps, PermuteBadDimsThrow) {
  const auto a = iota({2, 3, 4});
  EXPECT_TRUE(throws_with<ShapeError>([&] { permute(a, {0, 1}); }, {"permute", "[0,1]", "[2,3,4]", "3 dims"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { permute(a, {0, 0, 1}); }, {"permute", "[0,0,1]", "not a permutation", "[2,3,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { permute(a, {2, -1, 0}); }, {"permute", "[2,-1,0]", "axis 2", "[2,3,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { permute(a, {0, 1, 3}); }, {"permute", "axis 3", "[2,3,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { transpose(a, 0, 3); }, {"transpose", "axis 3", "[2,3,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { transpose(a, -4, 0); }, {"transpose", "axis -4", "[2,3,4]"}));
}

// ---- expand ----

TEST(ShapeOps, ExpandMatchesNaiveBroadcast) {
  const std::vector<std::pair<Shape, std::vector<Index>>> cases = {
      {{3, 1}, {2, 3, 4}}, {{1}, {5}}, {{2, 3}, {-1, 3}}, {{}, {2, 2}}, {{1, 3}, {2, -1}}, {{1, 1}, {4, 1, 0}}};
  for (const auto& [shape, target] : cases) {
    SCOPED_TRACE(format_shape(shape));
    const auto a = iota(shape);
    const auto e = expand(a, target);
    EXPECT_EQ(e.value(), naive_expand(a.value(), e.shape()));
  }
  EXPECT_EQ(expand(iota({3, 1}), {2, 3, 4}).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(expand(iota({1, 3}), {2, -1}).shape(), (Shape{2, 3}));
}

TEST(ShapeOps, GradcheckExpandSumsOverStretchedAxes) {
  const std::vector<std::pair<Shape, std::vector<Index>>> cases = {
      {{3, 1}, {2, 3, 4}}, {{1}, {5}}, {{2, 3}, {-1, 3}}, {{}, {2, 2}}, {{1, 3}, {2, -1}}, {{2, 1, 1}, {2, 2, 3}}};
  for (const auto& [shape, target] : cases) {
    SCOPED_TRACE(format_shape(shape));
    EXPECT_TRUE(passes_gradcheck([t = target](const Inputs& x) { return expand(x[0], t); }, {random_tensor(shape, 51)}));
  }
}

TEST(ShapeOps, ExpandBadTargetsThrow) {
  const auto a = iota({2, 3});
  EXPECT_TRUE(throws_with<ShapeError>([&] { expand(a, {3}); }, {"expand", "fewer", "[2,3]", "[3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { expand(a, {2, 4}); }, {"expand", "axis 1", "size 3", "[2,3]", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { expand(a, {-1, 2, 3}); }, {"expand", "-1", "leading", "[2,3]", "[-1,2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { expand(a, {2, -2}); }, {"expand", "-2", "[2,3]", "[2,-2]"}));
}

// ---- slice / narrow ----

TEST(ShapeOps, SliceFollowsPythonClamping) {
  const auto a = iota({10});
  const std::vector<std::tuple<Index, Index, Index, std::vector<double>>> cases = {
      {2, 8, 3, {2, 5}},     {-3, 10, 1, {7, 8, 9}}, {7, 100, 1, {7, 8, 9}}, {-100, 2, 1, {0, 1}},
      {5, 3, 1, {}},         {0, -7, 2, {0, 2}},     {9, 10, 5, {9}},        {0, 10, 4, {0, 4, 8}},
      {10, 12, 1, {}},       {3, 3, 1, {}},          {4, 10, std::numeric_limits<Index>::max(), {4}},
  };
  for (const auto& [start, end, step, expected] : cases) {
    SCOPED_TRACE(std::to_string(start) + ":" + std::to_string(end) + ":" + std::to_string(step));
    const auto s = slice(a, 0, start, end, step);
    EXPECT_EQ(s.shape(), Shape{expected.size()});
    EXPECT_TRUE(std::equal(s.value().begin(), s.value().end(), expected.begin(), expected.end()));
  }
}

TEST(ShapeOps, SliceAndNarrowInnerAxesMatchNaiveTake) {
  const auto a = iota({3, 7, 2});
  EXPECT_EQ(slice(a, 1, 1, 7, 2).value(), naive_take(a.value(), 1, stepped(1, 3, 2)));
  EXPECT_EQ(slice(a, -1, -1, 2).value(), naive_take(a.value(), 2, {1}));
  EXPECT_EQ(slice(a, 0, 1, 3).value(), naive_take(a.value(), 0, {1, 2}));
  EXPECT_EQ(narrow(a, 1, 2, 4).value(), naive_take(a.value(), 1, stepped(2, 4, 1)));
  EXPECT_EQ(narrow(a, -2, -3, 3).value(), naive_take(a.value(), 1, stepped(4, 3, 1)));
  EXPECT_EQ(narrow(a, 0, 3, 0).shape(), (Shape{0, 7, 2}));
}

TEST(ShapeOps, GradcheckSliceAndNarrow) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return slice(x[0], 0, 1, 5, 2); }, {random_tensor({6}, 61)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return slice(x[0], -1, -4, 100, 3); }, {random_tensor({2, 5}, 62)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return slice(x[0], 0, -2, 3); }, {random_tensor({3, 1, 4}, 63)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return slice(x[0], 1, 2, 1); }, {random_tensor({2, 3}, 64)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return narrow(x[0], 1, 1, 2); }, {random_tensor({2, 4, 2}, 65)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return narrow(x[0], -1, -3, 3); }, {random_tensor({2, 3}, 66)}));
}

TEST(ShapeOps, SliceAndNarrowBadArgumentsThrow) {
  const auto a = iota({2, 4});
  EXPECT_TRUE(throws_with<ValueError>([&] { slice(a, 1, 0, 4, 0); }, {"slice", "step", "0", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { slice(a, 1, 4, 0, -1); }, {"slice", "step", "-1", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { slice(a, 2, 0, 1); }, {"slice", "axis 2", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { narrow(a, 1, 2, 3); }, {"narrow", "start 2", "length 3", "size 4", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { narrow(a, 1, 5, 0); }, {"narrow", "start 5", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { narrow(a, 1, -5, 1); }, {"narrow", "start -5", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { narrow(a, 0, 0, -1); }, {"narrow", "length -1", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { narrow(a, -3, 0, 1); }, {"narrow", "axis -3", "[2,4]"}));
}

// ---- concat / chunk / split ----

TEST(ShapeOps, ConcatJoinsAlongAxis) {
  const Tensor<double> a(xt::xarray<double>{{1, 2}, {3, 4}});
  const auto b = reshape(Tensor<double>(xt::xarray<double>{5, 6}), {2, 1});
  EXPECT_EQ(concat<double>({a, b}, -1).value(), (xt::xarray<double>{{1, 2, 5}, {3, 4, 6}}));
  EXPECT_EQ(cat<double>({a, a}, 0).value(), (xt::xarray<double>{{1, 2}, {3, 4}, {1, 2}, {3, 4}}));
  EXPECT_EQ(concat<double>({a}).value(), a.value());
  EXPECT_EQ(concat<double>({a, Tensor<double>::zeros({2, 0}), b}, 1).value(), (xt::xarray<double>{{1, 2, 5}, {3, 4, 6}}));
}

TEST(ShapeOps, ChunkFollowsPyTorch) {
  const auto sizes_of = [](const std::vector<Tensor<double>>& pieces, std::size_t axis) {
    std::vector<std::size_t> sizes;
    for (const auto& p : pieces) sizes.push_back(p.shape()[axis]);
    return sizes;
  };
  EXPECT_EQ(sizes_of(chunk(iota({5}), 3), 0), (std::vector<std::size_t>{2, 2, 1}));
  EXPECT_EQ(sizes_of(chunk(iota({6}), 4), 0), (std::vector<std::size_t>{2, 2, 2}));  // fewer pieces than asked
  EXPECT_EQ(sizes_of(chunk(iota({2}), 5), 0), (std::vector<std::size_t>{1, 1}));
  EXPECT_EQ(sizes_of(chunk(iota({3, 6}), 3, -1), 1), (std::vector<std::size_t>{2, 2, 2}));
  EXPECT_EQ(sizes_of(chunk(iota({0, 2}), 3), 0), (std::vector<std::size_t>{0, 0, 0}));
  EXPECT_EQ(chunk(iota({5}), 3)[2].value(), (xt::xarray<double>{4}));
  EXPECT_EQ(chunk(iota({2, 4}), 2, 1)[1].value(), (xt::xarray<double>{{2, 3}, {6, 7}}));
}

// chunks = SIZE_MAX once wrapped ceil(n / chunks) to 0 and divided by it (SIGFPE): run in a child
// so that a regression fails this test, not the suite. PyTorch gives n pieces of 1.
TEST(ShapeOpsDeathTest, ChunkIntoMoreChunksThanFitInSizeT) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const auto pieces = chunk(iota({3}), std::numeric_limits<std::size_t>::max());
        const bool ok = pieces.size() == 3 && pieces[0].value() == xt::xarray<double>{0} &&
                        pieces[1].value() == xt::xarray<double>{1} && pieces[2].value() == xt::xarray<double>{2};
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Pieces at an offset into a tensor with no elements (found by fuzz_shapes): the empty storage
// has a null data(), and offsetting it was undefined behaviour. clang's UBSan reports it, gcc's
// (tests/run-sanitizers) does not: the fuzz seed empty_tensor_windows_at_offsets replays it under
// clang in tests/run-fuzzers; this test keeps the results right.
TEST(ShapeOps, WindowsOfAnEmptyTensorAlongANonEmptyAxis) {
  GradientTape tape;
  const auto x = iota({3, 0, 3}, /*requires_grad=*/true);
  const auto pieces = chunk(x, 3, -1);
  ASSERT_EQ(pieces.size(), 3u);
  for (const auto& p : pieces) EXPECT_EQ(p.shape(), (Shape{3, 0, 1}));
  const auto tail = slice(x, 0, 1, 3);
  EXPECT_EQ(tail.shape(), (Shape{2, 0, 3}));
  EXPECT_EQ(concat(pieces, -1).shape(), (Shape{3, 0, 3}));
  tape.backward(sum(pieces[2]) + sum(tail));
  EXPECT_EQ(x.grad().shape(), (Shape{3, 0, 3}));
}

TEST(ShapeOps, SplitFollowsPyTorch) {
  const auto a = iota({2, 5});
  const auto by_size = split(a, 2, 1);
  ASSERT_EQ(by_size.size(), 3u);
  EXPECT_EQ(by_size[2].value(), naive_take(a.value(), 1, {4}));
  const auto by_list = split(a, std::vector<std::size_t>{1, 0, 4}, -1);
  ASSERT_EQ(by_list.size(), 3u);
  EXPECT_EQ(by_list[0].value(), naive_take(a.value(), 1, {0}));
  EXPECT_EQ(by_list[1].shape(), (Shape{2, 0}));
  EXPECT_EQ(by_list[2].value(), (xt::xarray<double>{{1, 2, 3, 4}, {6, 7, 8, 9}}));
  EXPECT_EQ(split(iota({0}), 3).size(), 1u);
  EXPECT_EQ(split(iota({4}), 7).size(), 1u);
}

TEST(ShapeOps, ChunkSplitConcatRoundTripExactly) {
  const auto a = random_tensor({4, 5, 3}, 71, false);
  for (const Index axis : {0, 1, 2, -1}) {
    for (const std::size_t k : {1, 2, 3, 4, 7}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + " k " + std::to_string(k));
      EXPECT_EQ(concat(chunk(a, k, axis), axis).value(), a.value());
      EXPECT_EQ(concat(split(a, k, axis), axis).value(), a.value());
    }
  }
  EXPECT_EQ(concat(split(a, std::vector<std::size_t>{2, 0, 3}, 1), 1).value(), a.value());
}

TEST(ShapeOps, GradcheckConcat) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return concat(x, 1); },
                               {random_tensor({2, 1}, 81), random_tensor({2, 3}, 82), random_tensor({2, 2}, 83)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return concat(x, -3); },
                               {random_tensor({1, 3, 1}, 84), random_tensor({2, 3, 1}, 85)}));
  // An input that needs no gradient is held constant; a repeated input collects both gradients.
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return concat<double>({x[0], x[1], x[0]}, 0); },
                               {random_tensor({2, 2}, 86), random_tensor({1, 2}, 87, false)}));
}

TEST(ShapeOps, GradcheckChunkAndSplitPieces) {
  const auto a = random_tensor({5, 2}, 91);
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(passes_gradcheck([i](const Inputs& x) { return chunk(x[0], 3)[i]; }, {a}));
    EXPECT_TRUE(passes_gradcheck([i](const Inputs& x) { return split(x[0], 2)[i]; }, {a}));
    EXPECT_TRUE(passes_gradcheck([i](const Inputs& x) { return split(x[0], std::vector<std::size_t>{1, 3, 1})[i]; }, {a}));
  }
  // Every piece used at once, reordered: the pieces' gradients add up in the input.
  EXPECT_TRUE(passes_gradcheck(
      [](const Inputs& x) {
        const auto p = chunk(x[0], 2, -1);
        return concat<double>({p[1], p[0], p[1]}, -1);
      },
      {random_tensor({2, 1, 5}, 92)}));
}

TEST(ShapeOps, ConcatBadInputsThrow) {
  const auto a = iota({2, 3});
  EXPECT_TRUE(throws_with<ValueError>([] { concat(std::vector<Tensor<double>>{}); }, {"concat", "at least one"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { concat<double>({a, iota({3})}); }, {"concat", "tensors[1]", "[3]", "[2,3]", "dims"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { concat<double>({a, iota({3, 3})}, 1); }, {"concat", "tensors[1]", "[3,3]", "[2,3]", "axis 0"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { concat<double>({iota({}), iota({})}); }, {"concat", "[]", "0-d"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { concat<double>({a, a}, 2); }, {"concat", "axis 2", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { concat<double>({a, Tensor<double>()}); }, {"concat", "tensors[1]", "undefined"}));
}

TEST(ShapeOps, ChunkAndSplitBadArgumentsThrow) {
  const auto a = iota({2, 4});
  EXPECT_TRUE(throws_with<ValueError>([&] { chunk(a, 0); }, {"chunk", "chunks", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { chunk(a, 2, 2); }, {"chunk", "axis 2", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { split(a, 0, 1); }, {"split", "split_size", "size 4", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { split(a, std::vector<std::size_t>{1, 2}, 1); },
                                      {"split", "[1,2]", "sum to 3", "size 4", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { split(a, std::vector<std::size_t>{2, 3}, -1); }, {"split", "[2,3]", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { split(a, 1, -3); }, {"split", "axis -3", "[2,4]"}));
}

// ---- index_select ----

TEST(ShapeOps, IndexSelectPicksEntriesWithRepeats) {
  const auto a = iota({3, 4, 2});
  EXPECT_EQ(index_select(a, 0, IndexArray{2, 0, 2}).value(), naive_take(a.value(), 0, {2, 0, 2}));
  EXPECT_EQ(index_select(a, 1, IndexArray{3, 3, 1}).value(), naive_take(a.value(), 1, {3, 3, 1}));
  EXPECT_EQ(index_select(a, -1, IndexArray{1}).value(), naive_take(a.value(), 2, {1}));
  EXPECT_EQ(index_select(a, 1, IndexArray::from_shape({0})).shape(), (Shape{3, 0, 2}));
}

TEST(ShapeOps, IndexSelectRepeatsAccumulateGradient) {
  const auto a = iota({3, 2}, true);
  GradientTape tape;
  const auto y = index_select(a, 0, IndexArray{0, 2, 0, 0});
  tape.backward(y, xt::xarray<double>{{1, 2}, {3, 4}, {5, 6}, {7, 8}});
  EXPECT_EQ(a.grad(), (xt::xarray<double>{{13, 16}, {0, 0}, {3, 4}}));
}

TEST(ShapeOps, LargeIndexSelectGradientMatchesNaive) {
  // Wide enough rows and enough outer slices for the column-tiled parallel backward.
  const auto a = iota({64, 3, 300}, true);
  const std::vector<Index> idx = {0, 2, 0, 1, 0};
  GradientTape tape;
  const auto y = index_select(a, 1, IndexArray{0, 2, 0, 1, 0});
  const xt::xarray<double> seed = iota(y.shape()).value();
  tape.backward(y, seed);
  xt::xarray<double> expected = xt::zeros<double>(a.shape());
  for (std::size_t o = 0; o < 64; ++o)
    for (std::size_t k = 0; k < idx.size(); ++k)
      for (std::size_t c = 0; c < 300; ++c) expected(o, static_cast<std::size_t>(idx[k]), c) += seed(o, k, c);
  EXPECT_EQ(a.grad(), expected);
}

TEST(ShapeOps, GradcheckIndexSelect) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return index_select(x[0], 0, IndexArray{2, 0, 2}); },
                               {random_tensor({3, 4}, 101)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return index_select(x[0], -1, IndexArray{3, 3, 1}); },
                               {random_tensor({2, 4}, 102)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return index_select(x[0], 1, IndexArray{0}); },
                               {random_tensor({2, 1, 3}, 103)}));
}

TEST(ShapeOps, IndexSelectBadIndexThrows) {
  const auto a = iota({3, 4});
  EXPECT_TRUE(throws_with<ShapeError>([&] { index_select(a, 0, IndexArray{{0, 1}, {1, 2}}); },
                                      {"index_select", "1-D", "[2,2]", "[3,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { index_select(a, 0, IndexArray{0, 5}); },
                                      {"index_select", "index 5", "position 1", "[0, 3)", "[3,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { index_select(a, 1, IndexArray{-1}); },
                                      {"index_select", "index -1", "position 0", "[3,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { index_select(a, 2, IndexArray{0}); }, {"index_select", "axis 2", "[3,4]"}));
}

TEST(ShapeOps, FloatInstantiationsWork) {
  const Tensor<float> a(xt::xarray<float>{{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(transpose(a, 0, 1).value(), (xt::xarray<float>{{1, 4}, {2, 5}, {3, 6}}));
  EXPECT_EQ(expand(slice(a, 1, 2, 3), {2, 2}).value(), (xt::xarray<float>{{3, 3}, {6, 6}}));
  EXPECT_EQ(concat(chunk(a, 2, 1), 1).value(), a.value());
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// The shape ops are linear: each sample multiplies by an input (or squares), so that the second
// derivative is not zero.
TAPEGRAD_OP_SPEC(reshape) {
  OpSpec s("reshape", "shape");
  s.samples = {
      {"reshape", [](const auto& x) { return mul(reshape(x[0], {3, -1}), x[1]); },
       [] { return V{leaf({2, 3}, 112), leaf({3, 2}, 113)}; }},
  };
  s.errors = {
      error_input<ShapeError>("reshape_element_count_mismatch", "`reshape`", "[2,3] to [4,2]",
                  [] { return reshape(bad_inputs::zeros({2, 3}), {4, 2}); },
                  {"reshape", "[2,3]", "[4,2]"}),
      error_input<ValueError>("reshape_two_inferred_sizes", "`reshape`", "[-1,-1]",
                  [] { return reshape(bad_inputs::zeros({2, 3}), {-1, -1}); },
                  {"reshape", "only one -1", "[-1,-1]"}),
      error_input<ShapeError>("reshape_inferred_next_to_zero", "`reshape`", "[0,3] to [0,-1]",
                  [] { return reshape(bad_inputs::zeros({0, 3}), {0, -1}); },
                  {"reshape", "[0,3]", "[0,-1]"}),
  };
  s.pytorch = {
      {"reshape", [](Call& c) -> Outputs { return {reshape(c.tensor(c.input()), c.integers(c.arg(0)))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(view) {
  OpSpec s("view", "shape");
  s.samples = {
      {"view_flatten", [](const auto& x) { return mul(view(x[0], {-1}), x[1]); },
       [] { return V{leaf({2, 3}, 131), leaf({6}, 132)}; }},
  };
  s.errors = {
      error_input<ValueError>("reshape_negative_size", "`view`", "[-2,3]",
                  [] { return view(bad_inputs::zeros({2, 3}), {-2, 3}); },
                  {"reshape", "size -2", "[2,3]"}),
  };
  s.pytorch = {
      {"view", [](Call& c) -> Outputs { return {view(c.tensor(c.input()), c.integers(c.arg(0)))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(permute) {
  OpSpec s("permute", "shape");
  s.samples = {
      OpCase("permute", [](const auto& x) { return mul(permute(x[0], {2, 0, 1}), x[1]); },
       [] { return V{leaf({2, 3, 4}, 114), leaf({4, 2, 3}, 115)}; }).at_scale([] { return V{leaf({20, 31, 47}, 927), leaf({47, 20, 31}, 928)}; }),
  };
  s.errors = {
      error_input<ShapeError>("permute_wrong_length", "`permute`", "dims {1,0} for [2,3,4]",
                  [] { return permute(bad_inputs::zeros({2, 3, 4}), {1, 0}); },
                  {"permute", "[1,0]", "[2,3,4]"}),
      error_input<ValueError>("permute_repeated_axis", "`permute`", "dims {0,-2} (axis 0 twice)",
                  [] { return permute(bad_inputs::zeros({2, 3}), {0, -2}); },
                  {"permute", "not a permutation", "axis 0"}),
      error_input<ValueError>("permute_axis_out_of_range", "`permute`", "dims {0,2} for [2,3]",
                  [] { return permute(bad_inputs::zeros({2, 3}), {0, 2}); },
                  {"permute", "axis 2", "[2,3]"}),
  };
  s.pytorch = {
      {"permute", [](Call& c) -> Outputs { return {permute(c.tensor(c.input()), c.integers(c.arg(0)))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(transpose) {
  OpSpec s("transpose", "shape");
  s.samples = {
      {"transpose", [](const auto& x) { return mul(transpose(x[0], 0, 1), x[0].template to<ElementOf<decltype(x)>>()); },
       [] { return V{leaf({3, 3}, 116)}; }},
      {"transpose_squeeze_index_select_0d",
       [](const auto& x) {
         return mul(mul(transpose(x[0], 0, -1), squeeze(x[0], -1)), index_select(x[0], 0, IndexArray{0}));
       },
       [] { return V{leaf({}, 709)}; }},
  };
  s.errors = {
      error_input<ValueError>("transpose_axis_out_of_range", "`transpose`", "axes 0, 5 of [2,3]",
                  [] { return transpose(bad_inputs::zeros({2, 3}), 0, 5); },
                  {"transpose", "axis 5", "[2,3]"}),
      error_input<ValueError>("transpose_axis_1_of_0d", "`transpose`", "dims 0 and 1 of a 0-d tensor",
                  [] { return transpose(bad_inputs::zeros({}), 0, 1); },
                  {"transpose", "axis 1", "[-1, 0]"}),
  };
  s.pytorch = {
      {"transpose",
       [](Call& c) -> Outputs { return {transpose(c.tensor(c.input()), c.integer(c.arg(0)), c.integer(c.arg(1)))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(unsqueeze) {
  OpSpec s("unsqueeze", "shape");
  s.samples.push_back({"unsqueeze_middle_times_other", [](const auto& x) { return mul(unsqueeze(x[0], 1), x[1]); },
                       [] { return V{leaf({2, 3}, 130), leaf({2, 4, 3}, 131)}; }});
  s.errors = {
      error_input<ValueError>("unsqueeze_axis_out_of_range", "`unsqueeze`", "axis 4 of [2,3]",
                  [] { return unsqueeze(bad_inputs::zeros({2, 3}), 4); },
                  {"unsqueeze", "axis 4", "[-3, 2]"}),
  };
  s.pytorch = {
      {"unsqueeze", [](Call& c) -> Outputs { return {unsqueeze(c.tensor(c.input()), c.integer(c.arg(0)))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(squeeze) {
  OpSpec s("squeeze", "shape");
  s.samples = {
      {"unsqueeze_squeeze", [](const auto& x) { return mul(squeeze(unsqueeze(x[0], 1)), x[0]); },
       [] { return V{leaf({4}, 117)}; }},
  };
  s.errors = {
      error_input<ValueError>("squeeze_axis_1_of_0d", "`squeeze(a, axis)`", "axis 1 of a 0-d tensor (0 and -1 are allowed)",
                  [] { return squeeze(bad_inputs::zeros({}), 1); },
                  {"squeeze", "axis 1", "[-1, 0]", "[]"}),
      error_input<ValueError>("squeeze_axis_out_of_range", "`squeeze(a, axis)`", "axis 2 of [2,1]",
                  [] { return squeeze(bad_inputs::zeros({2, 1}), 2); },
                  {"squeeze", "axis 2", "[2,1]"}),
  };
  s.pytorch = {
      {"squeeze",
       [](Call& c) -> Outputs {
         const T x = c.tensor(c.input());
         return {c.has_arg(0) ? squeeze(x, c.integer(c.arg(0))) : squeeze(x)};
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(expand) {
  OpSpec s("expand", "shape");
  s.samples = {
      {"expand", [](const auto& x) { return mul(expand(x[0], {2, 3, 4}), x[1]); },
       [] { return V{leaf({3, 1}, 110), leaf({2, 3, 4}, 111)}; }},
  };
  s.errors = {
      error_input<ShapeError>("expand_to_fewer_dims", "`expand`", "[2,3] to [3]",
                  [] { return expand(bad_inputs::zeros({2, 3}), {3}); },
                  {"expand", "[2,3]", "fewer"}),
      error_input<ShapeError>("expand_non_singleton_axis", "`expand`", "[2,3] to [2,4]",
                  [] { return expand(bad_inputs::zeros({2, 3}), {2, 4}); },
                  {"expand", "axis 1", "size 3", "4"}),
      error_input<ValueError>("expand_inferred_new_axis", "`expand`", "[3] to [-1,3]",
                  [] { return expand(bad_inputs::zeros({3}), {-1, 3}); },
                  {"expand", "size -1", "axis 0"}),
      error_input<ValueError>("expand_to_huge_shape", "`expand`", "[1] to [2^40, 2^40]",
                  [] { return expand(bad_inputs::zeros({1}), {Index{1} << 40, Index{1} << 40}); },
                  {"expand", "[1099511627776,1099511627776]", "fit in memory"}),
  };
  s.pytorch = {
      {"expand", [](Call& c) -> Outputs { return {expand(c.tensor(c.input()), c.integers(c.arg(0)))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(slice) {
  OpSpec s("slice", "shape");
  s.no_pytorch = "not yet mapped to OpInfo slice (aten.slice.Tensor)";
  s.samples = {
      {"slice_step", [](const auto& x) { return mul(slice(x[0], 1, 1, 5, 2), slice(x[0], 1, 0, 2)); },
       [] { return V{leaf({2, 5}, 118)}; }},
  };
  s.errors = {
      error_input<ValueError>("slice_zero_step", "`slice`", "step 0",
                  [] { return slice(bad_inputs::zeros({5}), 0, 0, 5, 0); },
                  {"slice", "step", "0"}),
      error_input<ValueError>("slice_axis_out_of_range", "`slice`", "axis 1 of [5]",
                  [] { return slice(bad_inputs::zeros({5}), 1, 0, 5); },
                  {"slice", "axis 1", "[5]"}),
  };
  return s;
}

TAPEGRAD_OP_SPEC(narrow) {
  OpSpec s("narrow", "shape");
  s.samples = {
      {"narrow", [](const auto& x) { return mul(narrow(x[0], 0, 1, 2), x[1]); }, [] { return V{leaf({4, 2}, 119), leaf({2, 2}, 120)}; }},
  };
  s.errors = {
      error_input<ValueError>("narrow_past_the_end", "`narrow`", "start 3, length 4 of [5]",
                  [] { return narrow(bad_inputs::zeros({5}), 0, 3, 4); },
                  {"narrow", "start 3", "length 4", "[5]"}),
      error_input<ValueError>("narrow_negative_length", "`narrow`", "length -1",
                  [] { return narrow(bad_inputs::zeros({5}), 0, 1, -1); },
                  {"narrow", "length -1", "[5]"}),
  };
  s.pytorch = {
      {"narrow",
       [](Call& c) -> Outputs {
         return {narrow(c.tensor(c.input()), c.integer(c.arg(0)), c.integer(c.arg(1)), c.integer(c.arg(2)))};
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(concat) {
  OpSpec s("concat", "shape");
  s.aliases = {"cat"};
  s.samples = {
      {"concat_with_constant", [](const auto& x) { return mul(concat({x[0], x[1], x[2]}, 1), concat({x[1], x[0], x[2]}, 1)); },
       [] { return V{leaf({2, 3}, 123), leaf({2, 3}, 124), constant({2, 1}, 125)}; }},
  };
  s.errors = {
      error_input<ValueError>("concat_empty_list", "`concat`", "no tensors",
                  [] { return concat(std::vector<Tensor<double>>{}); },
                  {"concat", "at least one"}),
      error_input<ShapeError>("concat_0d_tensors", "`concat`", "two 0-d tensors",
                  [] { return concat({bad_inputs::zeros({}), bad_inputs::zeros({})}); },
                  {"concat", "[]", "0-d"}),
      error_input<ShapeError>("concat_rank_mismatch", "`concat`", "[2,3] with [3]",
                  [] { return concat({bad_inputs::zeros({2, 3}), bad_inputs::zeros({3})}); },
                  {"concat", "tensors[1]", "[3]", "[2,3]"}),
      error_input<ShapeError>("concat_size_mismatch_off_axis", "`concat`", "[2,3] with [2,4] along axis 0",
                  [] { return concat({bad_inputs::zeros({2, 3}), bad_inputs::zeros({2, 4})}, 0); },
                  {"concat", "tensors[1]", "[2,4]", "axis 1"}),
      error_input<ValueError>("concat_axis_out_of_range", "`concat`", "axis 1 of [2] tensors",
                  [] { return concat({bad_inputs::zeros({2}), bad_inputs::zeros({2})}, 1); },
                  {"concat", "axis 1", "[2]"}),
      error_input<ValueError>("concat_undefined_member", "`cat`", "an undefined tensor in the list",
                  [] { return cat({bad_inputs::zeros({2}), bad_inputs::undefined()}); },
                  {"concat", "tensors[1]", "undefined"}),
  };
  s.pytorch = {
      {"cat", [](Call& c) -> Outputs { return {cat(c.tensors(c.input()), dim_arg(c, 0, 0))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(chunk) {
  OpSpec s("chunk", "shape");
  s.samples = {
      {"chunk_pieces", [](const auto& x) { const auto p = chunk(x[0], 2, 0); return mul(p[0], p[1]); },
       [] { return V{leaf({4, 3}, 122)}; }},
  };
  s.errors = {
      error_input<ValueError>("chunk_zero_chunks", "`chunk`", "0 chunks",
                  [] { return chunk(bad_inputs::zeros({4}), 0); },
                  {"chunk", "chunks", "0", "[4]"}),
      error_input<ValueError>("chunk_axis_out_of_range", "`chunk`", "axis 1 of [4]",
                  [] { return chunk(bad_inputs::zeros({4}), 2, 1); },
                  {"chunk", "axis 1", "[4]"}),
  };
  s.pytorch = {
      {"chunk",
       [](Call& c) -> Outputs {
         const T x = c.tensor(c.input());
         return chunk(x, std::size_t(c.integer(c.arg(0))), dim_arg(c, 1, 0));
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(split) {
  OpSpec s("split", "shape");
  s.samples = {
      {"split_pieces", [](const auto& x) { const auto p = split(x[0], 2, 1); return mul(p[0], p[1]); },
       [] { return V{leaf({3, 4}, 121)}; }},
  };
  s.errors = {
      error_input<ValueError>("split_zero_size", "`split(a, split_size)`", "split_size 0 of a non-empty axis",
                  [] { return split(bad_inputs::zeros({4}), std::size_t{0}); },
                  {"split", "split_size", "size 4"}),
      error_input<ValueError>("split_sizes_do_not_sum", "`split(a, sizes)`", "sizes {1,2} for an axis of 4",
                  [] { return split(bad_inputs::zeros({4}), std::vector<std::size_t>{1, 2}); },
                  {"split", "[1,2]", "sum to 3", "4"}),
  };
  s.pytorch = {
      {"split", split_row},
      {"split.list_args", split_row},
      {"split_with_sizes", split_row},
  };
  return s;
}

TAPEGRAD_OP_SPEC(index_select) {
  OpSpec s("index_select", "shape");
  s.samples = {
      {"index_select_repeats", [](const auto& x) { return mul(index_select(x[0], 1, IndexArray{2, 0, 2}), x[1]); },
       [] { return V{leaf({2, 3, 2}, 126), leaf({2, 3, 2}, 127)}; }},
  };
  s.errors = {
      error_input<ValueError>("index_select_0d_index_not_zero", "`index_select`", "index [1] for a 0-d tensor",
                  [] { return index_select(bad_inputs::zeros({}), 0, bad_inputs::one_d({1})); },
                  {"index_select", "0-d", "[0]", "holding 1"}),
      error_input<ShapeError>("index_select_2d_index", "`index_select`", "a [1,1] index",
                  [] { return index_select(bad_inputs::zeros({4, 2}), 0, bad_inputs::indices({1, 1}, 0)); },
                  {"index_select", "1-D", "[1,1]", "[4,2]"}),
      error_input<ValueError>("index_select_out_of_range", "`index_select`", "index 4 of an axis of 4",
                  [] { return index_select(bad_inputs::zeros({4, 2}), 0, bad_inputs::one_d({0, 4})); },
                  {"index_select", "index 4", "position 1", "[4,2]"}),
      error_input<ValueError>("index_select_negative_index", "`index_select`", "index -1",
                  [] { return index_select(bad_inputs::zeros({4, 2}), 1, bad_inputs::one_d({-1})); },
                  {"index_select", "index -1", "position 0", "[4,2]"}),
      error_input<ValueError>("index_select_axis_out_of_range", "`index_select`", "axis 1 of [4]",
                  [] { return index_select(bad_inputs::zeros({4}), 1, bad_inputs::one_d({0})); },
                  {"index_select", "axis 1", "[4]"}),
  };
  s.pytorch = {
      {"index_select",
       [](Call& c) -> Outputs {
         return {index_select(c.tensor(c.input()), c.integer(c.arg(0)), c.indices(c.arg(1)))};
       }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
