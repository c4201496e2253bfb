#include "autograd/testing/gradcheck.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/embedding.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

namespace tapegrad {
namespace {

// Index arrays of several shapes (0-d, 1-D, 2-D), with repeats, into a table of 5 rows. Row 2 is
// picked by two of them, row 3 by none.
const std::vector<IndexArray> kIndexCases = {IndexArray(2), IndexArray{4, 1, 4}, IndexArray{{0, 2, 2}, {2, 4, 0}}};

// Number of times each row is picked.
std::vector<double> row_counts(const IndexArray& indices, std::size_t rows) {
  std::vector<double> counts(rows, 0.0);
  for (std::size_t k = 0; k < indices.size(); ++k) counts[static_cast<std::size_t>(indices.data()[k])] += 1.0;
  return counts;
}

TEST(Embedding, ForwardGathersRowsForEveryIndexShape) {
  const auto weight = random_tensor({5, 3}, 1, false);
  for (const IndexArray& indices : kIndexCases) {
    SCOPED_TRACE(format_shape(indices.shape()));
    const auto out = embedding(weight, indices);
    Shape expected_shape(indices.shape().begin(), indices.shape().end());
    expected_shape.push_back(3);
    ASSERT_EQ(out.shape(), expected_shape);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      for (std::size_t j = 0; j < 3; ++j) {
        EXPECT_EQ(out.value().data()[k * 3 + j], weight.value()(indices.data()[k], j));
      }
    }
  }
}

TEST(Embedding, PaddingRowIsStillReturnedForward) {
  const auto weight = random_tensor({4, 2}, 2, false);
  const auto out = embedding(weight, IndexArray{0, 3}, 0);
  EXPECT_EQ(out.value()(0, 1), weight.value()(0, 1));
}

TEST(Embedding, GradcheckOverIndexShapesWithRepeats) {
  for (const IndexArray& indices : kIndexCases) {
    SCOPED_TRACE(format_shape(indices.shape()));
    EXPECT_TRUE(passes_gradcheck([&indices](const Inputs& x) { return embedding(x[0], indices); },
                                 {random_tensor({5, 3}, 3)}));
    // A padding row that no index picks changes nothing.
    EXPECT_TRUE(passes_gradcheck([&indices](const Inputs& x) { return embedding(x[0], indices, 3); },
                                 {random_tensor({5, 3}, 4)}));
  }
}

TEST(Embedding, PaddingRowGetsNoGradientOthersGetTheirCounts) {
  for (const IndexArray& indices : kIndexCases) {
    for (Index padding_idx : {Index{2}, Index{-3}}) {  // -3 is row 2 of 5, counted from the end
      SCOPED_TRACE(format_shape(indices.shape()) + " padding_idx " + std::to_string(padding_idx));
      const auto weight = random_tensor({5, 3}, 5);
      GradientTape tape;
      const auto out = embedding(weight, indices, padding_idx);
      tape.backward(out, xt::xarray<double>(xt::ones<double>(out.shape())));
      const std::vector<double> counts = row_counts(indices, 5);
      for (std::size_t r = 0; r < 5; ++r) {
        for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(weight.grad()(r, j), r == 2 ? 0.0 : counts[r]);
      }
    }
  }
}

// gradcheck cannot hold where the padding row is read (its gradient is 0 by definition), but the
// backward is a function of its own, so its derivative (create_graph) can be checked: the padding
// row's entries and the gradient at padded positions must not move the first derivative.
TEST(Embedding, PaddingBackwardIsDifferentiableAgain) {
  for (Index padding_idx : {Index{2}, Index{-3}}) {
    SCOPED_TRACE("padding_idx " + std::to_string(padding_idx));
    const auto squared = [padding_idx](const Inputs& x) {
      const auto e = embedding(x[0], IndexArray{{1, 2, 1}, {2, 4, 0}}, padding_idx);
      return mul(e, e);
    };
    EXPECT_TRUE(gradgradcheck(squared, {random_tensor({5, 3}, 9)}));
  }
}

TEST(Embedding, BackwardSumsSeedRowsPerPickedRow) {
  const IndexArray indices = {{1, 3, 1}, {1, 0, 3}};
  const auto weight = random_tensor({4, 2}, 6);
  const auto seed = random_tensor({2, 3, 2}, 7, false).value();
  GradientTape tape;
  tape.backward(embedding(weight, indices, 0), seed);
  xt::xarray<double> expected = xt::zeros<double>({4, 2});
  for (std::size_t a = 0; a < 2; ++a)
    for (std::size_t b = 0; b < 3; ++b)
      for (std::size_t j = 0; j < 2; ++j)
        if (indices(a, b) != 0) expected(indices(a, b), j) += seed(a, b, j);
  EXPECT_LT(testing::max_abs_diff(weight.grad(), expected), 1e-15);
}

TEST(Embedding, SameGradientBitsAtOneAndTwoThreads) {
  const testing_support::ThreadCountTest thread_count_test;
  Generator gen(8);
  const auto weight = Tensor<float>::randn({100, 64}, gen, 0.0f, 1.0f, true);
  IndexArray indices = IndexArray::from_shape({64, 64});
  for (std::size_t k = 0; k < indices.size(); ++k) indices.data()[k] = gen.randint(0, 100);
  Tensor<float> seed_source = Tensor<float>::randn({64, 64, 64}, gen);

  auto run = [&](std::size_t threads) {
    set_num_threads(threads);
    weight.node()->clear_grad();
    GradientTape tape;
    tape.backward(embedding(weight, indices, 5), seed_source.value());
    return xt::xarray<float>(weight.grad());
  };
  const xt::xarray<float> one = run(1);
  const xt::xarray<float> two = run(2);
  EXPECT_TRUE(one == two);
}

TEST(Embedding, BadInputsThrowNamingOpAndShapes) {
  const auto weight = random_tensor({5, 3}, 9);
  EXPECT_TRUE(throws_with<ShapeError>([] { embedding(random_tensor({5}, 1), IndexArray{0}); }, {"embedding", "2-D", "[5]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { embedding(random_tensor({2, 2, 2}, 1), IndexArray{0}); },
                                      {"embedding", "[2,2,2]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { embedding(weight, IndexArray{{0, 1, 2}, {3, 4, 7}}); },
                                      {"embedding", "index 7", "position [1,2]", "[2,3]", "num_embeddings 5", "[5,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { embedding(weight, IndexArray{-1}); },
                                      {"embedding", "index -1", "position [0]", "num_embeddings 5"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { embedding(weight, IndexArray(5)); }, {"embedding", "index 5", "position []"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { embedding(weight, IndexArray{0}, 5); },
                                      {"embedding", "padding_idx 5", "num_embeddings 5", "[5,3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { embedding(weight, IndexArray{0}, -6); },
                                      {"embedding", "padding_idx -6", "num_embeddings 5"}));
  EXPECT_TRUE(throws_with<ValueError>([] { embedding(Tensor<double>(), IndexArray{0}); }, {"embedding", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// embedding is linear in its weight: squared or multiplied by another leaf.
TAPEGRAD_OP_SPEC(embedding) {
  OpSpec s("embedding", "embedding");
  s.samples = {
      // embedding: repeated indices, output times another leaf, a (negative) padding index.
      {"embedding_squared",
       [](const auto& x) {
         const auto e = embedding(x[0], IndexArray{{0, 2, 2}, {3, 0, 1}});
         return mul(e, e);
       },
       [] { return V{leaf({4, 3}, 330)}; }},
      {"embedding_times_leaf", [](const auto& x) { return mul(embedding(x[0], IndexArray{3, 0, 3, 2}), x[1]); },
       [] { return V{leaf({4, 2}, 332), leaf({4, 2}, 333)}; }},
      // The padding row is picked but its gradient is 0 by definition, which central differences
      // agree with only where the output does not move with it: here its values are 0 and only
      // their square is read. test_embedding checks the padding row's second order in full.
      {"embedding_padding_squared",
       [](const auto& x) {
         const auto e = embedding(x[0], IndexArray{{1, 2, 1}, {3, 1, 0}}, -3);
         return mul(e, e);
       },
       [] {
         Tensor<double> weight = leaf({4, 3}, 331);
         for (std::size_t j = 0; j < 3; ++j) weight.mutable_value()(1, j) = 0.0;
         return V{weight};
       }},
  };
  s.errors = {
      error_input<ShapeError>("embedding_weight_not_2d", "`embedding`", "a 1-D weight",
                  [] { return embedding(bad_inputs::zeros({4}), bad_inputs::one_d({0})); },
                  {"embedding", "2-D", "[4]"}),
      error_input<ValueError>("embedding_index_out_of_range", "`embedding`", "index 4 of 4 rows",
                  [] { return embedding(bad_inputs::zeros({4, 2}), bad_inputs::one_d({1, 4})); },
                  {"embedding", "index 4", "position", "4"}),
      error_input<ValueError>("embedding_negative_index", "`embedding`", "index -1",
                  [] { return embedding(bad_inputs::zeros({4, 2}), bad_inputs::one_d({-1})); },
                  {"embedding", "index -1", "4"}),
      error_input<ValueError>("embedding_padding_idx_out_of_range", "`embedding`", "padding_idx 4 of 4 rows",
                  [] { return embedding(bad_inputs::zeros({4, 2}), bad_inputs::one_d({0}), 4); },
                  {"embedding", "padding_idx 4", "4"}),
      error_input<ValueError>("embedding_undefined_weight", "`embedding`", "undefined weight",
                  [] { return embedding(bad_inputs::undefined(), bad_inputs::one_d({0})); },
                  {"embedding", "'weight'", "undefined"}),
  };
  s.pytorch = {
      {"nn.functional.embedding",
       [](Call& c) -> Outputs {
         const Value* padding_idx = c.kwarg("padding_idx");
         // OpInfo calls it as (weight, indices).
         return {embedding(c.tensor(c.input()), c.indices(c.arg(0)),
                           padding_idx ? std::optional<Index>(c.integer(*padding_idx)) : std::nullopt)};
       }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
