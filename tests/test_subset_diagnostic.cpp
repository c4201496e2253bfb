// study::patch_slice_set (several slices patched in one forward) and study::subset_diagnostic
// (AtP*'s bound on the false negatives left outside the verified rows): a set equals its slices
// patched by hand; where effects add up without cancelling, every row's bound holds and no row at
// the threshold is ruled out, even when AtP sees none of them; through a saturated softmax the
// patches AtP misses stay among the rows not ruled out; bad input.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "nn/transformer/transformer.h"
#include "study/activation_patching.h"
#include "study/attribution_patching.h"
#include "study/patching_agreement.h"
#include "study/scoped_point_hooks.h"
#include "study/subset_diagnostic.h"
#include "tests/support/attention_pair.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using testing::AttentionPair;

// sum((z - z_corrupted)^2), z as the pair's module sees it in the run (after any patch): each slice
// of z patched adds its own non-negative term, so effects add up and never cancel; and the
// gradient at the corrupted run is 0, so AtP sees nothing.
study::RunLoss<double> z_distance_run(AttentionPair& a, const xt::xarray<double>& z_corrupted, const Tensor<double>& q,
                                     const Tensor<double>& kv) {
  return [&a, z_corrupted, q, kv] {
    Tensor<double> z;
    study::ScopedPointHooks<double> read;
    read.add(a.mha.hook_point("hook_z"), [&](const Tensor<double>& x) -> std::optional<Tensor<double>> {
      z = x;
      return std::nullopt;
    });
    a.output(q, kv);
    const Tensor<double> d = z - Tensor<double>(z_corrupted);
    return sum(d * d);
  };
}

TEST(PatchSliceSet, IsItsSlicesPatchedTogetherByHand) {
  AttentionPair a(1.0);
  const auto run = a.corrupted();
  const auto clean = study::run_with_cache<double>(a.mha, a.clean(), {"hook_z", "hook_v"});
  EXPECT_EQ(study::patch_slice_set<double>(a.mha, run, clean, {{"hook_z", 2}}, 1),
            study::patch_slice<double>(a.mha, run, clean, "hook_z", 1, 2));
  double by_hand = 0;
  {
    study::ScopedPointHooks<double> hooks;
    for (const char* point : {"hook_v", "hook_z"}) {
      hooks.add(a.mha.hook_point(point), [&, point](const Tensor<double>& x) -> std::optional<Tensor<double>> {
        xt::xarray<double> patched = x.value();
        const std::size_t head = std::string(point) == "hook_v" ? 0 : 3;
        xt::view(patched, xt::all(), head) = xt::view(clean.value(point), xt::all(), head);
        if (std::string(point) == "hook_z") xt::view(patched, xt::all(), 1) = xt::view(clean.value(point), xt::all(), 1);
        return Tensor<double>(patched);
      });
    }
    NoGradGuard no_grad;
    by_hand = run().item();
  }
  const double together = study::patch_slice_set<double>(a.mha, run, clean, {{"hook_z", 3}, {"hook_v", 0}, {"hook_z", 1}}, 1);
  EXPECT_NEAR(together, by_hand, 1e-13);
  EXPECT_GT(std::abs(together - study::patch_slice<double>(a.mha, run, clean, "hook_z", 1, 3)), 1e-3);

  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_slice_set<double>(a.mha, run, clean, {}, 1); }, {"patch_slice_set: no slices to patch"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_slice_set<double>(a.mha, run, clean, {{"hook_z", 1}, {"hook_z", 1}}, 1); },
                                      {"patch_slice_set: slice 1 of 'hook_z' is named twice"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_slice_set<double>(a.mha, run, clean, {{"hook_z", 4}}, 1); },
                                      {"patch_slice_set: slice 4 is out of range for axis 1 of 'hook_z', [2,4,3,2]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_slice_set<double>(a.mha, run, clean, {{"hook_q", 0}}, 1); },
                                      {"patch_slice_set", "hook_q"}));
}

// Effects that add up without cancelling: each row's bound is at least its exact effect, every row
// at the threshold stays, and rows below it are ruled out, although AtP estimates every row as 0.
TEST(SubsetDiagnostic, WhereEffectsDoNotCancelEveryRowAtTheThresholdStays) {
  AttentionPair a(1.0);
  const xt::xarray<double> z_corrupted =
      study::run_with_cache<double>(a.mha, a.corrupted(), {"hook_z"}).value("hook_z");
  const auto run = z_distance_run(a, z_corrupted, a.corrupted_q, a.corrupted_kv);
  const auto clean = study::run_with_cache<double>(a.mha, z_distance_run(a, z_corrupted, a.clean_q, a.clean_kv), {"hook_z"});
  const study::SliceAxes head_and_query{1, 2};
  const auto atp = study::attribution_patch<double>(a.mha, run, clean, {"hook_z"}, head_and_query);
  const std::vector<double> exact = study::exact_effects(study::patch_slices<double>(a.mha, run, clean, {"hook_z"}, head_and_query));
  ASSERT_EQ(exact.size(), 12u);  // 4 heads x 3 queries
  for (const auto& row : atp.rows) EXPECT_NEAR(row.atp, 0.0, 1e-12);
  std::vector<double> sorted = exact;
  std::sort(sorted.begin(), sorted.end());
  const double threshold = sorted[8];  // the 4 largest reach it
  const std::vector<std::size_t> verified = {0, 5};
  const auto d = study::subset_diagnostic<double>(a.mha, run, clean, study::slices_of(atp), head_and_query, verified, threshold,
                                                  {.subsets = 48, .inclusion = 0.2, .seed = 3});
  ASSERT_EQ(d.rows.size(), 10u);
  EXPECT_GT(d.subsets_patched, 30u);
  std::size_t at_threshold = 0;
  for (std::size_t r = 0; r < d.rows.size(); ++r) {
    const double effect = exact[d.rows[r]];
    EXPECT_GE(d.bound[r], effect - 1e-12) << "row " << d.rows[r];
    if (effect < threshold) continue;
    ++at_threshold;
    EXPECT_NE(std::find(d.not_ruled_out.begin(), d.not_ruled_out.end(), d.rows[r]), d.not_ruled_out.end()) << "row " << d.rows[r];
  }
  EXPECT_GE(at_threshold, 2u);
  EXPECT_LT(d.not_ruled_out.size(), d.rows.size()) << "some rows below the threshold must be ruled out";
}

// Through a saturated softmax AtP misses the large query and key patches; with AtP's top 2
// verified, every large patch it left stays among the rows not ruled out.
TEST(SubsetDiagnostic, KeepsThePatchesAtPMissesThroughASaturatedSoftmax) {
  AttentionPair a(30.0);
  const auto run = a.corrupted();
  const std::vector<std::string> points = {"hook_q", "hook_k"};
  const auto clean = study::run_with_cache<double>(a.mha, a.clean(), points);
  const auto atp = study::attribution_patch<double>(a.mha, run, clean, points, 1);
  const std::vector<double> exact = study::exact_effects(study::patch_slices<double>(a.mha, run, clean, points, 1));
  std::vector<std::size_t> order(atp.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return std::abs(atp.rows[x].atp) > std::abs(atp.rows[y].atp); });
  const std::vector<std::size_t> verified(order.begin(), order.begin() + 2);
  const double threshold = 0.1;
  const auto d = study::subset_diagnostic<double>(a.mha, run, clean, study::slices_of(atp), 1, verified, threshold, {.subsets = 32, .inclusion = 0.3, .seed = 1});
  std::size_t missed = 0;
  for (const std::size_t r : d.rows) {
    if (std::abs(exact[r]) < threshold) continue;
    missed += std::abs(atp.rows[r].atp) < 0.01 * std::abs(exact[r]);
    EXPECT_NE(std::find(d.not_ruled_out.begin(), d.not_ruled_out.end(), r), d.not_ruled_out.end()) << "row " << r;
  }
  EXPECT_GE(missed, 2u) << "AtP must miss large patches here for this test to mean anything";
}

TEST(SubsetDiagnostic, BadInputIsRefusedNamingTheProblem) {
  AttentionPair a(1.0);
  const auto run = a.corrupted();
  const auto clean = study::run_with_cache<double>(a.mha, a.clean(), {"hook_z"});
  const auto atp = study::attribution_patch<double>(a.mha, run, clean, {"hook_z"}, 1);
  const auto diagnose = [&](const std::vector<std::size_t>& verified, double threshold, study::SubsetDiagnosticOptions options) {
    return [&, verified, threshold, options] { study::subset_diagnostic<double>(a.mha, run, clean, study::slices_of(atp), 1, verified, threshold, options); };
  };
  EXPECT_TRUE(throws_with<ValueError>(diagnose({4}, 1, {}), {"subset_diagnostic: verified row 4 is past the 4 slices"}));
  EXPECT_TRUE(throws_with<ValueError>(diagnose({1, 1}, 1, {}), {"subset_diagnostic: verified row 1 is named twice"}));
  EXPECT_TRUE(throws_with<ValueError>(diagnose({}, 0, {}), {"subset_diagnostic: the threshold must be positive and finite"}));
  EXPECT_TRUE(throws_with<ValueError>(diagnose({}, std::nan(""), {}), {"the threshold must be positive and finite"}));
  EXPECT_TRUE(throws_with<ValueError>(diagnose({}, 1, {.subsets = 0}), {"subset_diagnostic: no subsets to patch"}));
  EXPECT_TRUE(throws_with<ValueError>(diagnose({}, 1, {.inclusion = 0}), {"subset_diagnostic: inclusion must be in (0, 1]"}));
  EXPECT_TRUE(throws_with<ValueError>(diagnose({}, 1, {.inclusion = 1.5}), {"inclusion must be in (0, 1]"}));

  // Training mode with dropout: each subset's forward would draw its own masks.
  Generator gen(5);
  nn::transformer::Transformer<double> model(7, 7, 10, 0, 8, 2, 16, 2, /*dropout=*/0.1, 1e-5, gen);
  model.train();
  const study::RunLoss<double> run_model = [&] { return sum(model(IndexArray({{1, 2, 3}}), IndexArray({{1, 2}}))); };
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        study::subset_diagnostic<double>(model, run_model, study::ActivationCache<double>{},
                                         {{"encoder.encoder_layers.0.multi_head_attention.hook_z", 0}}, 1, {}, 1);
      },
      {"subset_diagnostic", "dropout is active in '"}));
}

}  // namespace
}  // namespace tapegrad
