// gather, scatter_add and index_fill (autograd/ops/indexing.h): values against hand-computed
// numbers (checked with PyTorch 1.13), gradients, gradcheck over a table of shapes, bad inputs.
#include <algorithm>
#include <numeric>

#include "autograd/ops/indexing.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {


// Indices / values laid out in `shape` (a braced list of one-element rows is ambiguous in xtensor).
IndexArray indices_shaped(std::initializer_list<Index> values, const Shape& shape) {
  IndexArray a = IndexArray::from_shape(shape);
  std::copy(values.begin(), values.end(), a.begin());
  return a;
}

// ---- gather ----

TEST(Gather, PicksAlongDim) {
  const auto x = iota({2, 3});  // [[0,1,2],[3,4,5]]
  EXPECT_EQ(gather(x, 1, IndexArray{{0, 0}, {1, 0}}).value(), (xt::xarray<double>{{0, 0}, {4, 3}}));
  EXPECT_EQ(gather(x, 0, IndexArray{{1, 0, 1}}).value(), (xt::xarray<double>{{3, 1, 5}}));
  EXPECT_EQ(gather(x, -1, indices_shaped({2, 1}, {2, 1})).value(), column({2, 4}));
}

TEST(Gather, ZeroDimAndEmpty) {
  const Tensor<double> five(xt::xarray<double>(5.0));
  EXPECT_EQ(gather(five, 0, IndexArray(Index{0})).value(), xt::xarray<double>(5.0));
  EXPECT_EQ(gather(five, 0, IndexArray{0, 0}).value(), (xt::xarray<double>{5, 5}));
  EXPECT_EQ(gather(iota({2}), 0, IndexArray(Index{1})).value(), xt::xarray<double>(1.0));
  EXPECT_EQ(gather(iota({2, 3}), 1, IndexArray::from_shape({2, 0})).shape(), (Shape{2, 0}));
}

TEST(Gather, GradientScatterAddsRepeats) {
  const auto x = iota({2, 3}, true);
  GradientTape tape;
  const auto y = gather(x, 1, IndexArray{{0, 0, 2}, {1, 1, 1}});
  const auto grads = tape.gradient(sum(mul(y, iota({2, 3}))), {x});
  EXPECT_EQ(grads[0].value(), (xt::xarray<double>{{1, 0, 2}, {0, 12, 0}}));
}

TEST(Gather, MatchesNaiveLoopAcrossParallelBlocks) {
  const auto x = random_tensor({37, 300}, 3, false);
  IndexArray index = IndexArray::from_shape({30, 250});
  for (std::size_t k = 0; k < index.size(); ++k) index.data()[k] = Index((k * 7919) % 37);
  const auto y = gather(x, 0, index);
  for (std::size_t i = 0; i < 30; ++i)
    for (std::size_t j = 0; j < 250; ++j) ASSERT_EQ(y.value()(i, j), x.value()(std::size_t(index(i, j)), j));
}

TEST(Gather, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return gather(x[0], 1, IndexArray{{0, 0}, {2, 1}}); },
                               {random_tensor({2, 3}, 1)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return gather(x[0], 0, indices_shaped({1, 0, 1, 1}, {2, 2, 1})); },
                               {random_tensor({2, 3, 2}, 2)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return gather(x[0], 0, IndexArray{0, 0}); },
                               {random_tensor({}, 3)}));
}

TEST(Gather, BadInputsThrow) {
  const auto x = iota({2, 3});
  EXPECT_TRUE(throws_with<ValueError>([&] { gather(x, 1, indices_shaped({3}, {1, 1})); },
                                      {"gather", "index 3", "position [0,0]", "[0, 3)", "dim 1", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { gather(x, 1, indices_shaped({0, -1}, {2, 1})); }, {"gather", "index -1", "[1,0]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { gather(x, 1, IndexArray{0}); }, {"gather", "[1]", "[2,3]", "dims"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { gather(x, 1, indices_shaped({0, 0, 0}, {3, 1})); }, {"gather", "[3,1]", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { gather(x, 2, indices_shaped({0}, {1, 1})); }, {"gather", "axis 2", "[2,3]"}));
}

// ---- scatter_add ----

TEST(ScatterAdd, AddsRepeatsInto) {
  const auto self = Tensor<double>::zeros({3, 3});
  const auto src = Tensor<double>::ones({3, 3});
  EXPECT_EQ(scatter_add(self, 0, IndexArray{{0, 1}, {0, 2}}, src).value(),
            (xt::xarray<double>{{2, 0, 0}, {0, 1, 0}, {0, 1, 0}}));
  EXPECT_EQ(scatter_add(iota({2, 3}), 1, IndexArray{{2, 2}, {0, 1}}, iota({2, 2})).value(),
            (xt::xarray<double>{{0, 1, 3}, {5, 7, 5}}));
  EXPECT_EQ(scatter_add(iota({2, 3}), 0, IndexArray::from_shape({0}), src).value(), iota({2, 3}).value());
}

TEST(ScatterAdd, GradientsGatherBackAndPadSrc) {
  const auto self = iota({3, 3}, true);
  const auto src = iota({3, 3}, true);
  GradientTape tape;
  const auto y = scatter_add(self, 0, IndexArray{{0, 1}, {0, 2}}, src);
  const auto grads = tape.gradient(sum(mul(y, iota({3, 3}))), {self, src});
  EXPECT_EQ(grads[0].value(), iota({3, 3}).value());
  // src[i][j] went to row index[i][j] of column j; outside index's [2,2] it was not read.
  EXPECT_EQ(grads[1].value(), (xt::xarray<double>{{0, 4, 0}, {0, 7, 0}, {0, 0, 0}}));
}

TEST(ScatterAdd, MatchesNaiveLoopAcrossParallelBlocks) {
  const auto self = random_tensor({40, 300}, 5, false);
  const auto src = random_tensor({50, 300}, 6, false);
  IndexArray index = IndexArray::from_shape({50, 300});
  for (std::size_t k = 0; k < index.size(); ++k) index.data()[k] = Index((k * 7919) % 40);
  xt::xarray<double> expected = self.value();
  for (std::size_t i = 0; i < 50; ++i)
    for (std::size_t j = 0; j < 300; ++j) expected(std::size_t(index(i, j)), j) += src.value()(i, j);
  EXPECT_EQ(scatter_add(self, 0, index, src).value(), expected);
}

TEST(ScatterAdd, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return scatter_add(x[0], 1, IndexArray{{0, 0}, {2, 1}}, x[1]); },
                               {random_tensor({2, 3}, 1), random_tensor({2, 2}, 2)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return scatter_add(x[0], 0, IndexArray{{1, 0}}, x[1]); },
                               {random_tensor({2, 2}, 3), random_tensor({3, 3}, 4)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return scatter_add(x[0], 0, IndexArray(Index{0}), x[1]); },
                               {random_tensor({}, 5), random_tensor({}, 6)}));
}

TEST(ScatterAdd, BadInputsThrow) {
  const auto self = iota({3, 3});
  EXPECT_TRUE(throws_with<ValueError>([&] { scatter_add(self, 0, indices_shaped({3}, {1, 1}), self); },
                                      {"scatter_add", "index 3", "[0,0]", "[0, 3)", "self [3,3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { scatter_add(self, 0, IndexArray{{0, 1, 2, 0}}, self); },
                                      {"scatter_add", "[1,4]", "self [3,3]", "src [3,3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { scatter_add(self, 0, IndexArray{{0, 1, 2}}, iota({3, 2})); },
                                      {"scatter_add", "[1,3]", "src [3,2]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { scatter_add(self, 0, indices_shaped({0}, {1, 1}), iota({3})); },
                                      {"scatter_add", "src [3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { scatter_add(self, 0, indices_shaped({0}, {1, 1}), Tensor<double>()); },
                                      {"scatter_add", "'src'", "undefined"}));
}

// ---- index_fill ----

TEST(IndexFill, FillsListedPositions) {
  const auto x = iota({2, 3});
  EXPECT_EQ(index_fill(x, 1, IndexArray{-1, 0}, 7.0).value(), (xt::xarray<double>{{7, 1, 7}, {7, 4, 7}}));
  EXPECT_EQ(index_fill(x, 1, IndexArray(Index{2}), 7.0).value(), (xt::xarray<double>{{0, 1, 7}, {3, 4, 7}}));
  EXPECT_EQ(index_fill(x, 0, IndexArray{1, 1}, -1.0).value(), (xt::xarray<double>{{0, 1, 2}, {-1, -1, -1}}));
  EXPECT_EQ(index_fill(Tensor<double>(xt::xarray<double>(3.0)), 0, IndexArray{0}, 7.0).value(), xt::xarray<double>(7.0));
}

TEST(IndexFill, GradientIsZeroWhereFilled) {
  const auto x = iota({2, 3}, true);
  GradientTape tape;
  const auto grads = tape.gradient(sum(mul(index_fill(x, 1, IndexArray{1}, 7.0), iota({2, 3}))), {x});
  EXPECT_EQ(grads[0].value(), (xt::xarray<double>{{0, 0, 2}, {3, 0, 5}}));
}

TEST(IndexFill, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return index_fill(x[0], -1, IndexArray{0, -1}, 2.0); },
                               {random_tensor({2, 3, 4}, 1)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return index_fill(x[0], 1, IndexArray{1}, 2.0); },
                               {random_tensor({2, 3, 4}, 2)}));
}

TEST(IndexFill, BadInputsThrow) {
  const auto x = iota({2, 3});
  EXPECT_TRUE(throws_with<ValueError>([&] { index_fill(x, 1, IndexArray{0, 3}, 1.0); },
                                      {"index_fill", "index 3", "position 1", "[-3, 3)", "[2,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { index_fill(x, 1, IndexArray{-4}, 1.0); }, {"index_fill", "index -4"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { index_fill(x, 1, indices_shaped({0}, {1, 1}), 1.0); },
                                      {"index_fill", "0-d or 1-D", "[1,1]", "[2,3]"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// Entries (k * 7) % size laid out in `shape`: repeats and every row of a small axis. The samples
// take shape and size from their inputs, which at_scale makes larger.
IndexArray spread(const Shape& shape, std::size_t size) {
  IndexArray a = IndexArray::from_shape(shape);
  for (std::size_t k = 0; k < a.size(); ++k) a.data()[k] = Index((k * 7) % size);
  return a;
}

// gather, scatter_add and index_fill are linear in their tensors: each sample multiplies by an
// input so that gradgradcheck has a non-zero second derivative to check.
TAPEGRAD_OP_SPEC(gather) {
  OpSpec s("gather", "indexing");
  s.samples = {
      OpCase("gather_repeats", [](const auto& x) { return mul(gather(x[0], 1, spread(x[1].shape(), x[0].shape()[1])), x[1]); },
             [] { return V{leaf({2, 3}, 401), leaf({2, 4}, 402)}; })
          .at_scale([] { return V{leaf({300, 40}, 403), leaf({300, 50}, 404)}; }),
      {"gather_dim0_smaller_index", [](const auto& x) { return mul(gather(x[0], 0, spread({2, 2, 1}, 3)), x[1]); },
       [] { return V{leaf({3, 2, 2}, 405), leaf({2, 2, 1}, 406)}; }},
  };
  s.errors = {
      error_input<ValueError>("gather_index_out_of_range", "`gather`", "index 3 on an axis of 3",
                  [] { return gather(bad_inputs::zeros({2, 3}), 1, bad_inputs::indices({2, 1}, 3)); },
                  {"gather", "index 3", "position [0,0]", "[0, 3)", "[2,3]"}),
      error_input<ValueError>("gather_negative_index", "`gather`", "index -1 (PyTorch takes no negative gather index)",
                  [] { return gather(bad_inputs::zeros({2, 3}), 1, bad_inputs::indices({2, 1}, -1)); },
                  {"gather", "index -1", "[0, 3)"}),
      error_input<ShapeError>("gather_index_rank", "`gather`", "a [2] index for a [2,3] input",
                  [] { return gather(bad_inputs::zeros({2, 3}), 1, bad_inputs::indices({2}, 0)); },
                  {"gather", "[2]", "[2,3]", "dims"}),
      error_input<ShapeError>("gather_index_larger_off_dim", "`gather`", "index [3,1] for [2,3] along dim 1",
                  [] { return gather(bad_inputs::zeros({2, 3}), 1, bad_inputs::indices({3, 1}, 0)); },
                  {"gather", "[3,1]", "[2,3]"}),
      error_input<ValueError>("gather_dim_out_of_range", "`gather`", "dim 2 of [2,3]",
                  [] { return gather(bad_inputs::zeros({2, 3}), 2, bad_inputs::indices({1, 1}, 0)); },
                  {"gather", "axis 2", "[2,3]"}),
  };
  s.pytorch = {
      {"gather",
       [](Call& c) -> Outputs { return {gather(c.tensor(c.input()), c.integer(c.arg(0)), c.indices(c.arg(1)))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(scatter_add) {
  OpSpec s("scatter_add", "indexing");
  s.samples = {
      OpCase("scatter_add_self_and_src",
             [](const auto& x) { return mul(scatter_add(x[0], 0, spread(x[1].shape(), x[0].shape()[0]), x[1]), x[0]); },
             [] { return V{leaf({3, 3}, 407), leaf({4, 3}, 408)}; })
          .at_scale([] { return V{leaf({40, 300}, 409), leaf({50, 300}, 410)}; }),
      {"scatter_add_src_larger_than_index",
       [](const auto& x) { return mul(scatter_add(x[0], -1, spread({2, 2}, 3), x[1]), x[0]); },
       [] { return V{leaf({2, 3}, 411), leaf({3, 3}, 412)}; }},
  };
  s.errors = {
      error_input<ValueError>("scatter_add_index_out_of_range", "`scatter_add`", "index 3 on an axis of 3",
                  [] { return scatter_add(bad_inputs::zeros({3, 3}), 0, bad_inputs::indices({1, 1}, 3), bad_inputs::zeros({3, 3})); },
                  {"scatter_add", "index 3", "[0, 3)", "self [3,3]"}),
      error_input<ShapeError>("scatter_add_index_larger_than_src", "`scatter_add`", "index [1,3] with src [3,2]",
                  [] { return scatter_add(bad_inputs::zeros({3, 3}), 0, bad_inputs::indices({1, 3}, 0), bad_inputs::zeros({3, 2})); },
                  {"scatter_add", "[1,3]", "src [3,2]"}),
      error_input<ValueError>("scatter_add_undefined_src", "`scatter_add`", "undefined src",
                  [] { return scatter_add(bad_inputs::zeros({3}), 0, bad_inputs::indices({1}, 0), bad_inputs::undefined()); },
                  {"scatter_add", "'src'", "undefined"}),
  };
  s.pytorch = {
      {"scatter_add",
       [](Call& c) -> Outputs {
         return {scatter_add(c.tensor(c.input()), c.integer(c.arg(0)), c.indices(c.arg(1)), c.tensor(c.arg(2)))};
       }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(index_fill) {
  OpSpec s("index_fill", "indexing");
  s.samples = {
      OpCase("index_fill_negative_and_repeats",
             [](const auto& x) { return mul(index_fill(x[0], 1, IndexArray{-1, 0, -1}, 0.5), x[0]); },
             [] { return V{leaf({2, 4, 3}, 413)}; })
          .at_scale([] { return V{leaf({100, 10, 100}, 414)}; }),
  };
  s.errors = {
      error_input<ValueError>("index_fill_out_of_range", "`index_fill`", "index 3 on an axis of 3",
                  [] { return index_fill(bad_inputs::zeros({2, 3}), 1, bad_inputs::indices({1}, 3), 1.0); },
                  {"index_fill", "index 3", "[-3, 3)", "[2,3]"}),
      error_input<ShapeError>("index_fill_2d_index", "`index_fill`", "a [1,1] index",
                  [] { return index_fill(bad_inputs::zeros({2, 3}), 1, bad_inputs::indices({1, 1}, 0), 1.0); },
                  {"index_fill", "0-d or 1-D", "[1,1]", "[2,3]"}),
  };
  s.pytorch = {
      {"index_fill",
       [](Call& c) -> Outputs {
         const Value& value = c.arg(2);
         if (value.kind == Value::Kind::tensor) lacks("a fill value given as a tensor (with its gradient)");
         return {index_fill(c.tensor(c.input()), c.integer(c.arg(0)), c.indices(c.arg(1)), c.number(value))};
       }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
