// study::patch_slices, mean_cache and zero_cache (study/activation_patching.h): exact patching of
// each head's result against what linearity says it must give, a module run twice, the ablation
// sources, and bad input.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/transformer/multi_head_attention.h"
#include "study/activation_patching.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;

Tensor<double> random_input(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return Tensor<double>::uniform(shape, gen) * 2.0 - 1.0;
}

// One attention module on a clean and a corrupted input, with a metric linear in its output.
struct CleanAndCorrupted {
  Generator gen{41};
  nn::transformer::MultiHeadAttention<double> mha{8, 4, gen};
  Tensor<double> clean = random_input({2, 3, 8}, 1), corrupted = random_input({2, 3, 8}, 2);
  Tensor<double> weights = random_input({2, 3, 8}, 3);

  Tensor<double> metric_on(const Tensor<double>& x) { return sum(mha(x, x, x) * weights); }
};

// The output is the sum of the heads' results plus a bias, so patching head h's result moves a
// metric linear in the output by exactly sum((clean_h - corrupted_h) * weights).
TEST(ActivationPatching, PatchingAHeadsResultMovesALinearMetricByThatResultsDifference) {
  CleanAndCorrupted c;
  const std::string point = "hook_result";
  const auto clean = study::run_with_cache<double>(c.mha, [&] { return c.metric_on(c.clean); }, {point});
  const auto corrupted = study::run_with_cache<double>(c.mha, [&] { return c.metric_on(c.corrupted); }, {point});
  const auto table = study::patch_slices<double>(c.mha, [&] { return c.metric_on(c.corrupted); }, clean, {point}, 1);
  // The caches' runs computed the output as a sum of results: equal to rounding.
  EXPECT_NEAR(table.target_metric, corrupted.metric, 1e-12);
  EXPECT_EQ(table.source_metric, clean.metric);
  ASSERT_EQ(table.rows.size(), 4u);
  double recovered = 0;
  for (const study::PatchedSlice& row : table.rows) {
    EXPECT_EQ(row.point, point);
    const Array difference =
        xt::view(clean.value(point), xt::all(), row.index) - xt::view(corrupted.value(point), xt::all(), row.index);
    const double expected = corrupted.metric + xt::sum(difference * c.weights.value())();
    EXPECT_NEAR(row.metric, expected, 1e-12) << "head " << row.index;
    recovered += table.recovered(row);
  }
  EXPECT_NEAR(recovered, 1.0, 1e-12);  // linear: the heads' shares add up to the whole gap
}

// A module run twice in a forward is patched at both calls, each from its own cached tensor: the
// same as patching by hand with hooks of one's own.
TEST(ActivationPatching, AModuleRunTwiceIsPatchedAtEachCallFromItsOwnCall) {
  Generator gen(5);
  nn::labml::MultiHeadAttention<double> mha(2, 4, gen, /*dropout_prob=*/0.0);
  const Tensor<double> a = random_input({3, 2, 4}, 6), b = random_input({3, 2, 4}, 7);
  const Tensor<double> a2 = random_input({3, 2, 4}, 8), b2 = random_input({3, 2, 4}, 9);
  const auto run = [&](const Tensor<double>& x, const Tensor<double>& y) { return sum(mha(x, x, x) * mha(y, y, y)); };
  const auto clean = study::run_with_cache<double>(mha, [&] { return run(a, b); }, {"hook_z"});
  const auto table = study::patch_slices<double>(mha, [&] { return run(a2, b2); }, clean, {"hook_z"}, 1);
  ASSERT_EQ(table.rows.size(), 2u);
  for (const study::PatchedSlice& row : table.rows) {
    int call = 0;
    const auto id = mha.hook_point("hook_z").add_forward_hook([&](const Tensor<double>& z) {
      Array patched = z.value();
      const Array& from = clean.value(++call == 1 ? "hook_z" : "hook_z#2");
      xt::view(patched, xt::all(), row.index) = xt::view(from, xt::all(), row.index);
      return Tensor<double>(patched);
    });
    EXPECT_EQ(row.metric, run(a2, b2).item()) << "head " << row.index;
    mha.hook_point("hook_z").remove_hook(id);
  }
  for (const auto& [path, point] : mha.named_hook_points()) EXPECT_FALSE(point->active()) << path;
}

TEST(ActivationPatching, MeanAndZeroCachesAverageAndZeroTheRuns) {
  CleanAndCorrupted c;
  const std::vector<std::string> points = {"hook_z"};
  const auto one = study::run_with_cache<double>(c.mha, [&] { return c.metric_on(c.clean); }, points);
  const auto two = study::run_with_cache<double>(c.mha, [&] { return c.metric_on(c.corrupted); }, points);
  const auto mean = study::mean_cache<double>(
      c.mha, {[&] { return c.metric_on(c.clean); }, [&] { return c.metric_on(c.corrupted); }}, points);
  EXPECT_TRUE(xt::allclose(mean.value("hook_z"), (one.value("hook_z") + two.value("hook_z")) / 2.0, 0.0, 1e-15));
  const auto zeros = study::zero_cache(mean);
  EXPECT_EQ(zeros.value("hook_z"), Array(xt::zeros<double>(mean.value("hook_z").shape())));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::mean_cache<double>(c.mha, {}, points); }, {"mean_cache", "no runs"}));
}

TEST(ActivationPatching, BadInputNamesTheFunctionAndWhatIsWrong) {
  CleanAndCorrupted c;
  const auto clean = study::run_with_cache<double>(c.mha, [&] { return c.metric_on(c.clean); }, {"hook_z"});
  const auto run = [&] { return c.metric_on(c.corrupted); };
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_slices<double>(c.mha, run, clean, {"hook_q"}, 1); },
                                      {"patch_slices", "nothing at 'hook_q'"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_slices<double>(c.mha, run, clean, {"hook_zz"}, 1); },
                                      {"has no hook point 'hook_zz'"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_slices<double>(c.mha, run, clean, {"hook_z"}, 4); },
                                      {"patch_slices", "axis 4", "'hook_z'", "[2,4,3,2]"}));
  const Tensor<double> longer = random_input({2, 5, 8}, 4);
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] { study::patch_slices<double>(c.mha, [&] { return sum(c.mha(longer, longer, longer)); }, clean, {"hook_z"}, 1); },
      {"patch_slices", "'hook_z' is [2,4,5,2] in the target run but [2,4,3,2] in the source"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::patch_slices<double>(c.mha, [&] { return c.mha(c.clean, c.clean, c.clean); }, clean, {"hook_z"}, 1); },
      {"patch_slices", "single-element metric"}));
  for (const auto& [path, point] : c.mha.named_hook_points()) EXPECT_FALSE(point->active()) << path;
}

}  // namespace
}  // namespace tapegrad
