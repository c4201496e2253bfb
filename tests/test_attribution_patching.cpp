// study::attribution_patch (study/attribution_patching.h) and the agreement measures
// (study/patching_agreement.h): AtP exact where the metric is linear in the point and blind where a
// saturated softmax hides a patch, the QK fix exact there, the second-order term exact for a
// quadratic metric and equal to second differences of a real patch, agreement's textbook values,
// and bad input.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/core/tape.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/transformer/multi_head_attention.h"
#include "nn/transformer/transformer.h"
#include "study/attribution_patching.h"
#include "study/batched_patching.h"
#include "study/integrated_patching.h"
#include "study/metric_without_tape.h"
#include "study/metrics.h"
#include "study/patching_comparison.h"
#include "study/patching_agreement.h"
#include "study/slices.h"
#include "tests/support/attention_pair.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;

using testing::AttentionPair;

std::vector<double> first_order_estimates(const study::AttributionTable& table) {
  std::vector<double> out;
  for (const study::AttributedSlice& row : table.rows) out.push_back(row.atp);
  return out;
}

TEST(AttributionPatching, AtPIsExactPatchingWhenTheMetricIsLinearInThePoint) {
  AttentionPair p(1.0);
  const std::vector<std::string> points = {"hook_v", "hook_z", "hook_result"};
  const auto clean = study::run_with_cache<double>(p.mha, p.clean(), points);
  const auto exact = study::patch_slices<double>(p.mha, p.corrupted(), clean, points, 1);
  const auto atp = study::attribution_patch<double>(p.mha, p.corrupted(), clean, points, 1, {.second_order = true});
  ASSERT_EQ(atp.rows.size(), exact.rows.size());
  ASSERT_EQ(atp.rows.size(), 12u);
  EXPECT_NEAR(atp.target_metric, exact.target_metric, 1e-12);
  EXPECT_EQ(atp.source_metric, clean.metric);
  const std::vector<double> effects = study::exact_effects(exact);
  double largest = 0;
  for (std::size_t i = 0; i < atp.rows.size(); ++i) {
    EXPECT_EQ(atp.rows[i].point, exact.rows[i].point);
    EXPECT_EQ(atp.rows[i].index, exact.rows[i].index);
    EXPECT_NEAR(atp.rows[i].atp, effects[i], 1e-12) << atp.rows[i].point << " head " << atp.rows[i].index;
    EXPECT_NEAR(atp.rows[i].second_order, 0.0, 1e-12) << "linear: no curvature";
    largest = std::max(largest, std::abs(effects[i]));
  }
  EXPECT_GT(largest, 0.1) << "the patches must move the metric for the comparison to mean anything";
}

// Slices over several axes visit exactly the elements whose indices along them are the slice's.
TEST(PatchSlices, SlicesOverSeveralAxesVisitTheirElementsOnce) {
  const std::vector<std::size_t> shape = {2, 3, 4, 5};
  const study::SliceAxes slice{1, 3};
  EXPECT_EQ(slice.count(shape), 15u);
  EXPECT_EQ(slice.describe(), "axes {1, 3}");
  EXPECT_EQ(study::SliceAxes(2).describe(), "axis 2");
  std::vector<int> visits(2 * 3 * 4 * 5, 0);
  for (std::size_t index = 0; index < 15; ++index) {
    const std::vector<std::size_t> at = slice.coordinates(shape, index);
    EXPECT_EQ(at, (std::vector<std::size_t>{index / 5, index % 5}));
    std::size_t seen = 0;
    study::for_each_slice_element(shape, slice, index, [&](std::size_t offset) {
      const std::size_t d1 = offset / 20 % 3, d3 = offset % 5;
      EXPECT_EQ(d1, at[0]);
      EXPECT_EQ(d3, at[1]);
      ++visits[offset];
      ++seen;
    });
    EXPECT_EQ(seen, 8u);  // 2 x 4 along the other axes
  }
  for (int v : visits) EXPECT_EQ(v, 1);
}

// With A's cells as slices (axes {1, 2, 3}: head, query, key) and a metric linear in A (the values
// do not change), AtP is exact per cell, and a query's cells add up to patching its whole row.
TEST(AttributionPatching, AttentionCellsAreSlicesAndAtPIsExactForThemUnderALinearMetric) {
  AttentionPair p(1.0);
  p.corrupted_kv = p.clean_kv;  // only the queries differ: V is the same in both runs
  const auto clean = study::run_with_cache<double>(p.mha, p.clean(), {"hook_pattern"});
  const auto cells = study::patch_slices<double>(p.mha, p.corrupted(), clean, {"hook_pattern"}, {1, 2, 3});
  ASSERT_EQ(cells.rows.size(), 4u * 3 * 5);
  EXPECT_EQ(cells.rows[7].at, (std::vector<std::size_t>{0, 1, 2}));
  const auto atp = study::attribution_patch<double>(p.mha, p.corrupted(), clean, {"hook_pattern"}, {1, 2, 3});
  const auto rows = study::patch_slices<double>(p.mha, p.corrupted(), clean, {"hook_pattern"}, {1, 2});
  const std::vector<double> cell_effects = study::exact_effects(cells), row_effects = study::exact_effects(rows);
  double largest = 0;
  for (std::size_t i = 0; i < cells.rows.size(); ++i) {
    EXPECT_NEAR(atp.rows[i].atp, cell_effects[i], 1e-12) << i;
    largest = std::max(largest, std::abs(cell_effects[i]));
  }
  EXPECT_GT(largest, 1e-3);
  for (std::size_t r = 0; r < rows.rows.size(); ++r) {
    double sum = 0;
    for (std::size_t key = 0; key < 5; ++key) sum += cell_effects[r * 5 + key];
    EXPECT_NEAR(sum, row_effects[r], 1e-12) << "head and query " << r;
  }
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::patch_slices<double>(p.mha, p.corrupted(), clean, {"hook_pattern"}, {2, 1}); },
      {"patch_slices", "axes {2, 1} must increase"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::patch_slice<double>(p.mha, p.corrupted(), clean, "hook_pattern", {1, 2, 3}, 60); },
      {"patch_slice", "slice 60 is out of range for axes {1, 2, 3}", "[2,4,3,5]"}));
}

// With scores of some hundreds the softmax is saturated: a patched query or key moves A from one
// key to another, but the gradient through the softmax is ~0, so AtP reports almost nothing. The
// QK fix recomputes A exactly, and with a metric linear in A it is then exact.
TEST(AttributionPatching, ASaturatedSoftmaxHidesQueryAndKeyPatchesFromAtPAndTheQKFixFindsThem) {
  AttentionPair p(30.0);
  const std::vector<std::string> points = {"hook_q", "hook_k"};
  const auto clean = study::run_with_cache<double>(p.mha, p.clean(), {"hook_q", "hook_k", "hook_pattern"});
  const Array A = clean.value("hook_pattern");
  EXPECT_GT(xt::amax(A)(), 1 - 1e-9) << "the softmax must be saturated for this test to mean anything";
  const std::vector<double> effects = study::exact_effects(study::patch_slices<double>(p.mha, p.corrupted(), clean, points, 1));
  const auto plain = study::attribution_patch<double>(p.mha, p.corrupted(), clean, points, 1);
  const auto fixed = study::attribution_patch<double>(p.mha, p.corrupted(), clean, points, 1, {.qk_fix = true});
  ASSERT_EQ(plain.rows.size(), 8u);
  std::size_t missed = 0;
  for (std::size_t i = 0; i < effects.size(); ++i) {
    if (std::abs(effects[i]) < 0.1) continue;
    missed += std::abs(plain.rows[i].atp) < 0.01 * std::abs(effects[i]);
    EXPECT_NEAR(fixed.rows[i].atp, effects[i], 1e-9 * (1 + std::abs(effects[i])))
        << plain.rows[i].point << " head " << plain.rows[i].index;
  }
  EXPECT_GE(missed, 4u) << "AtP through a saturated softmax should miss most large patches";
}

// m = sum(out * w) + sum(out^2 * u) is quadratic in z (out is linear in it): the first-order term
// alone is off, and with 1/2 d^T H d the estimate is exact.
TEST(AttributionPatching, TheSecondOrderTermMakesTheEstimateExactForAQuadraticMetric) {
  AttentionPair p(1.0);
  const study::RunLoss<double> run_clean = p.quadratic(p.clean_q, p.clean_kv);
  const study::RunLoss<double> run_corrupted = p.quadratic(p.corrupted_q, p.corrupted_kv);
  const auto clean = study::run_with_cache<double>(p.mha, run_clean, {"hook_z"});
  const std::vector<double> effects =
      study::exact_effects(study::patch_slices<double>(p.mha, run_corrupted, clean, {"hook_z"}, 1));
  const auto atp = study::attribution_patch<double>(p.mha, run_corrupted, clean, {"hook_z"}, 1, {.second_order = true});
  double first_order_error = 0;
  for (std::size_t i = 0; i < effects.size(); ++i) {
    EXPECT_NEAR(atp.rows[i].estimate(), effects[i], 1e-12) << "head " << i;
    first_order_error = std::max(first_order_error, std::abs(atp.rows[i].atp - effects[i]));
    EXPECT_GE(atp.rows[i].curvature_share(), 0.0);
    EXPECT_LE(atp.rows[i].curvature_share(), 1.0);
  }
  EXPECT_GT(first_order_error, 1e-3) << "the metric must be curved for this test to mean anything";
}

// A two-layer Transformer: clean and corrupted token batches, the metric a weighted sum of the decoder's output.
struct PatchedTransformer {
  Generator gen{61};
  nn::transformer::Transformer<double> model{7, 7, 10, 0, 8, 2, 16, 2, 0.0, 1e-5, gen};
  IndexArray clean_src = IndexArray({{1, 2, 3, 4, 5}, {6, 5, 4, 3, 2}});
  IndexArray corrupted_src = IndexArray({{1, 2, 6, 4, 5}, {6, 1, 4, 3, 3}});
  IndexArray tgt = IndexArray({{1, 2, 3}, {1, 6, 5}});
  Tensor<double> weights = testing::uniform_attention_input({2, 3, 8}, 62);

  PatchedTransformer() { model.eval(); }
  study::RunLoss<double> run(const IndexArray& src) {
    return [this, src] { return sum(model(src, tgt) * weights); };
  }
};

const std::vector<std::string> kTransformerPoints = {
    "encoder.encoder_layers.0.multi_head_attention.hook_z", "encoder.encoder_layers.1.multi_head_attention.hook_pattern",
    "decoder.decoder_layers.0.src_tgt_attention.hook_result", "decoder.decoder_layers.1.hook_resid_pre"};

// The first-order estimates are the slice sums of (source - target) * the gradient run_with_cache
// reads with gradient hooks: two ways of taking d metric / d point agree.
TEST(AttributionPatching, AtPIsTheSliceSumOfTheDifferenceTimesTheCachedGradient) {
  PatchedTransformer t;
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), kTransformerPoints);
  const auto corrupted = study::run_with_cache<double>(t.model, t.run(t.corrupted_src), kTransformerPoints,
                                                       study::CacheGradients::kYes);
  t.model.zero_grad();
  const auto atp = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1);
  for (const Tensor<double>& parameter : t.model.parameters())
    EXPECT_FALSE(parameter.has_grad() && xt::any(xt::not_equal(parameter.grad(), 0.0))) << "no grad() changes";
  for (const study::AttributedSlice& row : atp.rows) {
    const Array difference = clean.value(row.point) - corrupted.value(row.point);
    EXPECT_NEAR(row.atp, study::slice_dot(difference, corrupted.grad(row.point), 1, row.index), 1e-12)
        << row.point << " " << row.index;
  }
}

// 1/2 d^T H d is half the second derivative of m(t), the metric with t times the slice's patch
// added at the point: against central second differences of m.
TEST(AttributionPatching, TheSecondOrderTermIsHalfTheSecondDifferenceOfThePatch) {
  PatchedTransformer t;
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), kTransformerPoints);
  const auto corrupted = study::run_with_cache<double>(t.model, t.run(t.corrupted_src), kTransformerPoints);
  const auto atp = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1,
                                                    {.second_order = true});
  double largest = 0;
  for (const study::AttributedSlice& row : atp.rows) {
    const Array difference = clean.value(row.point) - corrupted.value(row.point);
    const Array direction = study::with_slice_from(Array(xt::zeros_like(difference)), difference, 1, row.index);
    double step = 0;
    nn::HookPoint<double>& point = t.model.hook_point(row.point);
    const auto id = point.add_forward_hook([&](const Tensor<double>& x) { return Tensor<double>(x.value() + step * direction); });
    const auto metric_at = [&](double s) {
      step = s;
      NoGradGuard no_grad;
      return t.run(t.corrupted_src)().item();
    };
    constexpr double h = 1e-3;
    const double second_difference = (metric_at(h) - 2 * metric_at(0) + metric_at(-h)) / (h * h);
    point.remove_hook(id);
    EXPECT_NEAR(row.second_order, second_difference / 2, 1e-6 * (1 + std::abs(second_difference)))
        << row.point << " " << row.index;
    largest = std::max(largest, std::abs(row.second_order));
  }
  EXPECT_GT(largest, 1e-3) << "some patch must be curved for this test to mean anything";
}

TEST(AttributionPatching, LayerOutputPointsGroupEachLayersSublayerOutputs) {
  PatchedTransformer t;
  const auto layers = study::layer_output_points(t.model);
  ASSERT_EQ(layers.size(), 4u);  // 2 encoder and 2 decoder layers
  EXPECT_EQ(layers[0], (std::vector<std::string>{"encoder.encoder_layers.0.hook_self_attention_out",
                                                 "encoder.encoder_layers.0.hook_ffn_out"}));
  EXPECT_EQ(layers[3], (std::vector<std::string>{"decoder.decoder_layers.1.hook_self_attention_out",
                                                 "decoder.decoder_layers.1.hook_src_tgt_attention_out",
                                                 "decoder.decoder_layers.1.hook_ffn_out"}));
}

// GradDrop against the same sum taken another way: per layer, gradient hooks of one's own zero the
// layer's outputs' gradients in a run_with_cache backward, and |sum (source - target) * grad| is
// averaged over L - 1.
TEST(AttributionPatching, GradDropAveragesTheEstimatesWithEachLayersGradientDropped) {
  PatchedTransformer t;
  const auto layers = study::layer_output_points(t.model);
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), kTransformerPoints);
  const auto atp = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1,
                                                    {.grad_drop_layers = layers});
  std::vector<double> expected(atp.rows.size(), 0.0);
  for (const std::vector<std::string>& layer : layers) {
    std::vector<std::pair<nn::HookPoint<double>*, std::uint64_t>> ids;
    for (const std::string& path : layer) {
      nn::HookPoint<double>& point = t.model.hook_point(path);
      ids.emplace_back(&point, point.add_gradient_hook([](const Array& g) { return Array(xt::zeros_like(g)); }));
    }
    const auto dropped = study::run_with_cache<double>(t.model, t.run(t.corrupted_src), kTransformerPoints,
                                                       study::CacheGradients::kYes);
    for (auto [point, id] : ids) point->remove_hook(id);
    for (std::size_t i = 0; i < atp.rows.size(); ++i) {
      const study::AttributedSlice& row = atp.rows[i];
      const Array difference = clean.value(row.point) - dropped.value(row.point);
      expected[i] += std::abs(study::slice_dot(difference, dropped.grad(row.point), 1, row.index)) / double(layers.size() - 1);
    }
  }
  double largest = 0;
  for (std::size_t i = 0; i < atp.rows.size(); ++i) {
    EXPECT_NEAR(atp.rows[i].grad_drop, expected[i], 1e-12) << atp.rows[i].point << " " << atp.rows[i].index;
    largest = std::max(largest, expected[i]);
  }
  EXPECT_GT(largest, 1e-3);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1,
                                         {.grad_drop_layers = {layers[0]}});
      },
      {"attribution_patch", "GradDrop needs two layers or more"}));
}

TEST(AttributionPatching, TrainingModeWithActiveDropoutIsRefused) {
  Generator gen(3);
  nn::transformer::Transformer<double> model(5, 5, 10, 0, 4, 1, 8, 2, /*dropout=*/0.1, 1e-5, gen);
  const IndexArray src({{1, 2, 3}}), tgt({{1, 2}});
  const study::RunLoss<double> run = [&] { return sum(model(src, tgt)); };
  model.eval();
  const auto clean = study::run_with_cache<double>(model, run, {kTransformerPoints[0]});
  model.train();
  for (const char* who : {"attribution_patch", "patch_slices"}) {
    EXPECT_TRUE(throws_with<ValueError>(
        [&] {
          if (std::string(who) == "patch_slices") return void(study::patch_slices<double>(model, run, clean, {kTransformerPoints[0]}, 1));
          study::attribution_patch<double>(model, run, clean, {kTransformerPoints[0]}, 1);
        },
        {who, "dropout is active in '", "model.eval()"}));
  }
}

// Every option at once: the second-order walk records the gradient (create_graph) through the
// GradDrop gradient hooks, which must then change nothing; each column equals its option alone.
TEST(AttributionPatching, AllOptionsTogetherGiveEachOptionsColumnAlone) {
  PatchedTransformer t;
  const std::vector<std::string> points = {"encoder.encoder_layers.1.multi_head_attention.hook_q",
                                           "decoder.decoder_layers.0.src_tgt_attention.hook_k", kTransformerPoints[0],
                                           kTransformerPoints[3]};
  const auto layers = study::layer_output_points(t.model);
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), points);
  const auto all = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, points, 1,
                                                    {.qk_fix = true, .second_order = true, .grad_drop_layers = layers});
  const auto fixed = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, points, 1, {.qk_fix = true});
  const auto second = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, points, 1,
                                                       {.qk_fix = true, .second_order = true});
  const auto dropped = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, points, 1,
                                                        {.qk_fix = true, .grad_drop_layers = layers});
  ASSERT_EQ(all.rows.size(), fixed.rows.size());
  double curved = 0;
  for (std::size_t i = 0; i < all.rows.size(); ++i) {
    EXPECT_NEAR(all.rows[i].atp, fixed.rows[i].atp, 1e-13) << all.rows[i].point << " " << i;
    EXPECT_NEAR(all.rows[i].second_order, second.rows[i].second_order, 1e-13) << all.rows[i].point << " " << i;
    EXPECT_NEAR(all.rows[i].grad_drop, dropped.rows[i].grad_drop, 1e-13) << all.rows[i].point << " " << i;
    curved = std::max(curved, std::abs(all.rows[i].second_order));
  }
  EXPECT_GT(curved, 1e-4);
}

// A point named twice gets its rows twice, each as when named once, in every method.
TEST(AttributionPatching, APointNamedTwiceGetsTheSameRowsTwice) {
  PatchedTransformer t;
  const std::string z = kTransformerPoints[0];
  const std::vector<std::string> inputs = {"encoder.encoder_layers.0.hook_resid_pre"};
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), {z, inputs[0]});
  const auto once = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, {z}, 1,
                                                     {.qk_fix = true, .second_order = true});
  const auto twice = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, {z, z}, 1,
                                                      {.qk_fix = true, .second_order = true});
  const auto ig_once = study::integrated_patch<double>(t.model, t.run(t.corrupted_src), clean, {z}, 1,
                                                       {.steps = 2, .interpolate_at = inputs});
  const auto ig_twice = study::integrated_patch<double>(t.model, t.run(t.corrupted_src), clean, {z, z}, 1,
                                                        {.steps = 2, .interpolate_at = {inputs[0], inputs[0]}});
  ASSERT_EQ(twice.rows.size(), 2 * once.rows.size());
  ASSERT_EQ(ig_twice.rows.size(), 2 * ig_once.rows.size());
  for (std::size_t i = 0; i < twice.rows.size(); ++i) {
    const std::size_t j = i % once.rows.size();
    EXPECT_EQ(twice.rows[i].atp, once.rows[j].atp) << i;
    EXPECT_EQ(twice.rows[i].second_order, once.rows[j].second_order) << i;
    EXPECT_EQ(ig_twice.rows[i].atp, ig_once.rows[j].atp) << i;
  }
}

// A run that never reaches a point (the encoder alone, a decoder point) cannot be patched there:
// every function says so instead of reporting the unpatched metric or a zero estimate.
TEST(AttributionPatching, APointTheTargetRunNeverReachesIsRefusedByEveryFunction) {
  PatchedTransformer t;
  const std::string decoder_point = kTransformerPoints[2];
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), {decoder_point});
  const study::RunLoss<double> encoder_only = [&] { return sum(t.model.encode(t.corrupted_src)); };
  const study::ReplicatedRun<double> replicated = [&](std::size_t replicas) {
    return sum(reshape(t.model.encode(study::stacked_copies(t.corrupted_src, replicas)),
                       {static_cast<Index>(replicas), -1}),
               Axes{1});
  };
  const auto refused = [&](const std::string& who, const std::function<void()>& f) {
    return throws_with<ValueError>(f, std::vector<std::string>{who, "the target run never reached '" + decoder_point + "'"});
  };
  EXPECT_TRUE(refused("patch_slices", [&] { study::patch_slices<double>(t.model, encoder_only, clean, {decoder_point}, 1); }));
  EXPECT_TRUE(refused("attribution_patch",
                      [&] { study::attribution_patch<double>(t.model, encoder_only, clean, {decoder_point}, 1); }));
  EXPECT_TRUE(refused("integrated_patch",
                      [&] { study::integrated_patch<double>(t.model, encoder_only, clean, {decoder_point}, 1); }));
  EXPECT_TRUE(refused("patch_slices_batched",
                      [&] { study::patch_slices_batched<double>(t.model, replicated, clean, {decoder_point}, 1); }));
}

// A source holding NaN would make every patch and estimate NaN: every function refuses it.
TEST(AttributionPatching, ASourceHoldingNaNIsRefusedByEveryFunction) {
  PatchedTransformer t;
  const std::string z = kTransformerPoints[0];
  auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), {z});
  clean.values.at(z)(1, 0, 2, 1) = std::nan("");
  const auto refused = [&](const std::string& who, const std::function<void()>& f) {
    return throws_with<ValueError>(f, std::vector<std::string>{who, "the source's '" + z + "' holds NaN"});
  };
  const auto run = t.run(t.corrupted_src);
  EXPECT_TRUE(refused("patch_slices", [&] { study::patch_slices<double>(t.model, run, clean, {z}, 1); }));
  EXPECT_TRUE(refused("attribution_patch", [&] { study::attribution_patch<double>(t.model, run, clean, {z}, 1); }));
  EXPECT_TRUE(refused("integrated_patch", [&] { study::integrated_patch<double>(t.model, run, clean, {z}, 1); }));
  const study::ReplicatedRun<double> replicated = [&](std::size_t) { return Tensor<double>::zeros({1}); };
  EXPECT_TRUE(refused("patch_slices_batched", [&] { study::patch_slices_batched<double>(t.model, replicated, clean, {z}, 1); }));
}

// Masked scores are -inf in labml's attention: a source holding them patches as any other, and
// patching a run with its own scores changes nothing.
TEST(AttributionPatching, ScoresWithMinusInfinityPatch) {
  Generator gen(12);
  nn::labml::MultiHeadAttention<double> mha(2, 4, gen, /*dropout_prob=*/0.0);
  const Tensor<double> x = testing::uniform_attention_input({3, 2, 4}, 13);
  const AttendMask causal(Mask(xt::xarray<bool>(  // [seq_q, seq_k, batch]
      {{{true, true}, {false, false}, {false, false}}, {{true, true}, {true, true}, {false, false}}, {{true, true}, {true, true}, {true, true}}})));
  const study::RunLoss<double> run = [&] { return sum(mha(x, x, x, causal) * mha(x, x, x, causal)); };
  const auto own = study::run_with_cache<double>(mha, run, {"hook_attn_scores"});
  ASSERT_TRUE(xt::any(xt::isinf(own.value("hook_attn_scores"))));
  const auto table = study::patch_slices<double>(mha, run, own, {"hook_attn_scores"}, 1);
  for (const study::PatchedSlice& row : table.rows) EXPECT_EQ(row.metric, table.target_metric);
}

TEST(AttributionPatching, BadInputNamesTheFunctionAndWhatIsWrong) {
  AttentionPair p(1.0);
  const auto clean = study::run_with_cache<double>(p.mha, p.clean(), {"hook_z"});
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::attribution_patch<double>(p.mha, p.corrupted(), clean, {"hook_q"}, 1); },
      {"attribution_patch", "the source cached nothing at 'hook_q'"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::attribution_patch<double>(p.mha, p.corrupted(), clean, {"hook_z"}, 4); },
      {"attribution_patch", "axis 4 is not an axis of 'hook_z'", "[2,4,3,2]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::attribution_patch<double>(p.mha, [&] { return p.output(p.corrupted_q, p.corrupted_kv); }, clean, {"hook_z"}, 1); },
      {"attribution_patch", "single-element metric", "[2,3,8]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        study::attribution_patch<double>(p.mha, [&] { return p.corrupted()().detach(); }, clean, {"hook_z"}, 1);
      },
      {"attribution_patch", "requires no gradient"}));
  const auto other_shape = study::run_with_cache<double>(
      p.mha, [&] { return sum(p.output(testing::uniform_attention_input({1, 3, 8}, 7), testing::uniform_attention_input({1, 5, 8}, 8))); }, {"hook_z"});
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] { study::attribution_patch<double>(p.mha, p.corrupted(), other_shape, {"hook_z"}, 1); },
      {"attribution_patch", "'hook_z' is [2,4,3,2] in the target run but [1,4,3,2] in the source"}));
}

// The metric with every slice of `point` patched from `source`: the whole point's exact effect.
double metric_with_point_patched(nn::Module<double>& model, const study::RunLoss<double>& run, const std::string& point,
                                 const study::ActivationCache<double>& source) {
  nn::HookPoint<double>& p = model.hook_point(point);
  const auto id = p.add_forward_hook([&](const Tensor<double>&) { return Tensor<double>(source.value(point)); });
  const double patched = study::metric_without_tape<double>(run, "test", "run", "metric");
  p.remove_hook(id);
  return patched;
}

// Along the straight path the gradient of a quadratic metric is linear, so the midpoint rule
// integrates it exactly: the slices' scores add up to the whole point's exact effect (completeness),
// for any number of steps; AtP's do not.
TEST(IntegratedPatching, OnActivationsTheSlicesAddUpToTheWholePatchForAQuadraticMetric) {
  AttentionPair p(1.0);
  const study::RunLoss<double> run_clean = p.quadratic(p.clean_q, p.clean_kv);
  const study::RunLoss<double> run_corrupted = p.quadratic(p.corrupted_q, p.corrupted_kv);
  const auto clean = study::run_with_cache<double>(p.mha, run_clean, {"hook_z", "hook_v"});
  for (const char* point : {"hook_z", "hook_v"}) {
    const auto ig = study::integrated_patch<double>(p.mha, run_corrupted, clean, {point}, 1, {.steps = 3});
    const auto atp = study::attribution_patch<double>(p.mha, run_corrupted, clean, {point}, 1);
    double ig_sum = 0, atp_sum = 0;
    for (std::size_t i = 0; i < ig.rows.size(); ++i) {
      ig_sum += ig.rows[i].atp;
      atp_sum += atp.rows[i].atp;
    }
    const double whole = metric_with_point_patched(p.mha, run_corrupted, point, clean) - ig.target_metric;
    EXPECT_NEAR(ig_sum, whole, 1e-12) << point;
    EXPECT_GT(std::abs(atp_sum - whole), 1e-3) << point << ": the metric must be curved along the patch";
  }
}

// On inputs: the embeddings moved together from the corrupted batch to the clean one; summed over
// every position of both, the scores at the inputs themselves approach clean - corrupted as the
// quadrature refines (the midpoint rule's error falls as 1/m^2).
TEST(IntegratedPatching, OnInputsTheInputsScoresApproachTheWholeGapAsStepsGrow) {
  PatchedTransformer t;
  const std::vector<std::string> inputs = {"encoder.encoder_layers.0.hook_resid_pre",
                                           "decoder.decoder_layers.0.hook_resid_pre"};
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), inputs);
  const auto error_with = [&](std::size_t steps) {
    const auto ig = study::integrated_patch<double>(t.model, t.run(t.corrupted_src), clean, inputs, 1,
                                                    {.steps = steps, .interpolate_at = inputs});
    double total = 0;
    for (const study::AttributedSlice& row : ig.rows) total += row.atp;
    return std::abs(total - (ig.source_metric - ig.target_metric));
  };
  const double coarse = error_with(2), fine = error_with(16);
  EXPECT_LT(fine, coarse / 16) << coarse << " " << fine;
  EXPECT_GT(coarse, 1e-9) << "the metric must be curved along the path for this test to mean anything";
}

TEST(IntegratedPatching, BadInputNamesTheFunctionAndWhatIsWrong) {
  AttentionPair p(1.0);
  const auto clean = study::run_with_cache<double>(p.mha, p.clean(), {"hook_z"});
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::integrated_patch<double>(p.mha, p.corrupted(), clean, {"hook_z"}, 1, {.steps = 0}); },
      {"integrated_patch", "steps must be at least 1"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        study::integrated_patch<double>(p.mha, p.corrupted(), clean, {"hook_z"}, 1, {.interpolate_at = {"hook_v"}});
      },
      {"integrated_patch", "the source cached nothing at the interpolated point 'hook_v'"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::integrated_patch<double>(p.mha, p.corrupted(), clean, {"hook_q"}, 1); },
      {"integrated_patch", "the source cached nothing at 'hook_q'"}));
}

// compare_patching_methods gives each method's estimates as its own call does, and judges them
// against exact patching with agreement().
TEST(PatchingComparison, EachColumnIsItsMethodsCallJudgedAgainstExactPatching) {
  PatchedTransformer t;
  const std::vector<std::string> inputs = {"encoder.encoder_layers.0.hook_resid_pre",
                                           "decoder.decoder_layers.0.hook_resid_pre"};
  std::vector<std::string> cached = kTransformerPoints;
  cached.insert(cached.end(), inputs.begin(), inputs.end());
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), cached);
  const auto comparison = study::compare_patching_methods<double>(
      t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1,
      {.grad_drop_layers = study::layer_output_points(t.model), .ig_steps = 4, .ig_inputs = inputs, .k = 3});
  std::vector<std::string> names;
  for (const auto& m : comparison.methods) names.push_back(m.method);
  EXPECT_EQ(names, (std::vector<std::string>{"AtP", "AtP + QK fix", "AtP + second order", "GradDrop",
                                             "EAP-IG on activations, m=4", "EAP-IG on inputs, m=4"}));
  const std::vector<double> exact = study::exact_effects(comparison.exact);
  const auto second = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1,
                                                       {.second_order = true});
  const auto ig = study::integrated_patch<double>(t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1,
                                                  {.steps = 4, .interpolate_at = inputs});
  for (std::size_t i = 0; i < exact.size(); ++i) {
    EXPECT_EQ(comparison.methods[2].estimates[i], second.rows[i].estimate());
    EXPECT_EQ(comparison.methods[5].estimates[i], ig.rows[i].atp);
  }
  const study::Agreement expected = study::agreement(comparison.methods[2].estimates, exact, 3);
  EXPECT_EQ(comparison.methods[2].agreement.pearson, expected.pearson);
  EXPECT_EQ(comparison.methods[2].agreement.top_k_recall, expected.top_k_recall);
  std::vector<double> magnitudes;
  for (double e : exact) magnitudes.push_back(std::abs(e));
  EXPECT_EQ(comparison.methods[3].agreement.spearman, study::agreement(comparison.methods[3].estimates, magnitudes, 3).spearman);
}

TEST(StudyMetrics, MeanScoreAtTakesEachPositionsTokenAndItsGradientIsOneOverTheCount) {
  // scores[b, s, v] = 100 b + 10 s + v
  Array values = Array::from_shape({2, 3, 4});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 0; s < 3; ++s)
      for (std::size_t v = 0; v < 4; ++v) values(b, s, v) = 100.0 * b + 10.0 * s + v;
  const Tensor<double> scores(values, /*requires_grad=*/true);
  const IndexArray correct({{1, 2, 3}, {0, 0, 3}}), wrong({{0, 0, 0}, {1, 1, 1}});
  // (1 + 12 + 23 + 100 + 110 + 123) / 6
  EXPECT_DOUBLE_EQ(study::mean_score_at(scores, correct).item(), 369.0 / 6);
  EXPECT_DOUBLE_EQ(study::score_difference(scores, correct, wrong).item(), (369.0 - (0 + 10 + 20 + 101 + 111 + 121)) / 6);
  GradientTape tape;
  const auto grads = tape.gradient(study::score_difference(scores, correct, wrong), {scores});
  Array expected = xt::zeros<double>({2, 3, 4});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 0; s < 3; ++s) {
      expected(b, s, correct(b, s)) += 1.0 / 6;
      expected(b, s, wrong(b, s)) -= 1.0 / 6;
    }
  EXPECT_TRUE(xt::allclose(grads[0].value(), expected, 0.0, 1e-15));
  EXPECT_TRUE(throws_with<ShapeError>([&] { study::mean_score_at(scores, IndexArray({{1, 2}})); },
                                      {"mean_score_at", "scores [2,3,4]", "tokens [1,2]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::mean_score_at(scores, IndexArray({{1, 2, 4}, {0, 0, 0}})); },
                                      {"gather"}));
}

// One forward per several slices gives patch_slices' table: heads, positions of the residual
// stream and attention cells, in chunks that do not divide the slices evenly.
TEST(BatchedPatching, ReplicasPatchedOneSliceEachGivePatchSlicesTable) {
  PatchedTransformer t;
  const study::ReplicatedRun<double> run = [&](std::size_t replicas) {
    const Tensor<double> out = t.model(study::stacked_copies(t.corrupted_src, replicas), study::stacked_copies(t.tgt, replicas));
    // Each replica's sum(out * weights), as t.run's metric.
    const Tensor<double> per_replica = reshape(out, {static_cast<Index>(replicas), 1, -1});
    return sum(per_replica * reshape(t.weights, {1, 1, -1}), Axes{1, 2});
  };
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), kTransformerPoints);
  for (const study::SliceAxes& axes : {study::SliceAxes(1), study::SliceAxes{1, 2}}) {
    const std::vector<std::string> points = axes.axes.size() == 1 ? kTransformerPoints
                                                                   : std::vector<std::string>{kTransformerPoints[1]};
    const auto one_by_one = study::patch_slices<double>(t.model, t.run(t.corrupted_src), clean, points, axes);
    const auto batched = study::patch_slices_batched<double>(t.model, run, clean, points, axes, 3);
    ASSERT_EQ(batched.rows.size(), one_by_one.rows.size());
    EXPECT_NEAR(batched.target_metric, one_by_one.target_metric, 1e-12);
    for (std::size_t i = 0; i < batched.rows.size(); ++i) {
      EXPECT_EQ(batched.rows[i].point, one_by_one.rows[i].point);
      EXPECT_EQ(batched.rows[i].at, one_by_one.rows[i].at);
      EXPECT_NEAR(batched.rows[i].metric, one_by_one.rows[i].metric, 1e-12) << batched.rows[i].point << " " << i;
    }
  }
  EXPECT_EQ(study::stacked_copies(IndexArray({{1, 2}, {3, 4}}), 2), IndexArray({{1, 2}, {3, 4}, {1, 2}, {3, 4}}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::patch_slices_batched<double>(t.model, run, clean, kTransformerPoints, {0, 1}); },
      {"patch_slices_batched", "axes {0, 1} include axis 0"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::patch_slices_batched<double>(t.model, run, clean, kTransformerPoints, 1, 0); },
      {"patch_slices_batched", "replicas_per_forward must be at least 1"}));
  const study::ReplicatedRun<double> one_number = [&](std::size_t replicas) { return sum(run(replicas)); };
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::patch_slices_batched<double>(t.model, one_number, clean, kTransformerPoints, 1); },
      {"patch_slices_batched", "run(1) must return one metric per replica, shape [1], got []"}));
  const study::ReplicatedRun<double> unreplicated = [&](std::size_t replicas) {
    return sum(t.model(t.corrupted_src, t.tgt)) * Tensor<double>::ones({replicas});  // one batch for any count
  };
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] { study::patch_slices_batched<double>(t.model, unreplicated, clean, kTransformerPoints, 1); },
      {"patch_slices_batched", "in the run of 9 replicas but [2,"}));
}

// None in 59: 1 - 0.05^(1/59) (the closed form when nothing is found); 1 in 10: 0.3942, the
// tabulated one-sided 95% Clopper-Pearson limit; nothing sampled bounds nothing.
TEST(PatchingAgreement, TheFalseNegativeBoundIsClopperPearsons) {
  EXPECT_NEAR(study::proportion_upper_bound(0, 59), 1 - std::pow(0.05, 1.0 / 59), 1e-12);
  EXPECT_NEAR(study::proportion_upper_bound(1, 10), 0.3942, 1e-4);
  EXPECT_EQ(study::proportion_upper_bound(0, 0), 1.0);
  EXPECT_EQ(study::proportion_upper_bound(3, 3), 1.0);
  EXPECT_LT(study::proportion_upper_bound(0, 300), study::proportion_upper_bound(0, 30));
}

TEST(PatchingAgreement, HasTheTextbookValues) {
  const study::Agreement same = study::agreement({1, 2, 3, 4}, {2, 4, 6, 8}, 2);
  EXPECT_NEAR(same.pearson, 1.0, 1e-15);
  EXPECT_NEAR(same.spearman, 1.0, 1e-15);
  EXPECT_EQ(same.top_k_recall, 1.0);
  // x = 1..4, y = 1, 3, 2, 4: covariance 4 / 4, variances 5 / 4 each: 0.8, for the ranks too.
  // Top 2 by magnitude: estimates {3, 4} (indices 2, 3), exact {4, 3} (indices 3, 1): one shared.
  const study::Agreement swapped = study::agreement({1, 2, 3, 4}, {1, 3, 2, 4}, 2);
  EXPECT_NEAR(swapped.pearson, 0.8, 1e-15);
  EXPECT_NEAR(swapped.spearman, 0.8, 1e-15);
  EXPECT_EQ(swapped.top_k_recall, 0.5);
  EXPECT_EQ(swapped.compared, 4u);
  // Ties take their mean rank: ranks (1.5, 1.5, 3) and (1, 2, 3), Pearson sqrt(3) / 2.
  EXPECT_NEAR(study::agreement({5, 5, 7}, {1, 2, 3}, 1).spearman, std::sqrt(3.0) / 2, 1e-15);
  // The sign counts for correlation, not for recall (magnitudes).
  const study::Agreement opposite = study::agreement({-1, -2, -3}, {1, 2, 3}, 1);
  EXPECT_NEAR(opposite.pearson, -1.0, 1e-15);
  EXPECT_EQ(opposite.top_k_recall, 1.0);
  EXPECT_TRUE(std::isnan(study::agreement({1, 1, 1}, {1, 2, 3}, 1).pearson));
  EXPECT_TRUE(throws_with<ValueError>([] { study::agreement({1, 2}, {1, 2, 3}, 1); }, {"agreement", "2 estimates", "3 exact"}));
  EXPECT_TRUE(throws_with<ValueError>([] { study::agreement({1}, {1}, 1); }, {"agreement", "2 slices or more"}));
  EXPECT_TRUE(throws_with<ValueError>([] { study::agreement({1, 2}, {1, 2}, 0); }, {"agreement", "k must be"}));
}

// Verifying on every row (k + sample covering the table) is the agreement with a full exact sweep;
// on fewer rows it compares the estimate's top k and the sample only.
TEST(PatchingAgreement, VerifyingEveryRowIsTheAgreementWithTheFullSweep) {
  PatchedTransformer t;
  const auto clean = study::run_with_cache<double>(t.model, t.run(t.clean_src), kTransformerPoints);
  const auto atp = study::attribution_patch<double>(t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1);
  const auto exact = study::patch_slices<double>(t.model, t.run(t.corrupted_src), clean, kTransformerPoints, 1);
  const study::Agreement full = study::agreement(first_order_estimates(atp), study::exact_effects(exact), 3);
  const auto first_order = [](const study::AttributedSlice& row) { return row.atp; };
  const study::Verification verified =
      study::verify_attribution<double>(t.model, t.run(t.corrupted_src), clean, atp, 1, first_order, 3, 100, 7);
  EXPECT_EQ(verified.agreement.compared, atp.rows.size());
  EXPECT_NEAR(verified.agreement.pearson, full.pearson, 1e-12);
  EXPECT_NEAR(verified.agreement.spearman, full.spearman, 1e-12);
  EXPECT_EQ(verified.agreement.top_k_recall, full.top_k_recall);
  // Every row outside the estimate's top 3 was sampled: the false negatives are those of the exact
  // top 3 that the estimate's top 3 missed.
  EXPECT_EQ(verified.sampled, atp.rows.size() - 3);
  EXPECT_EQ(verified.sampled_false_negatives, std::size_t(std::lround((1 - full.top_k_recall) * 3)));
  const study::Verification part =
      study::verify_attribution<double>(t.model, t.run(t.corrupted_src), clean, atp, 1, first_order, 2, 3, 7);
  EXPECT_EQ(part.agreement.compared, 5u);
  EXPECT_EQ(part.agreement.k, 2u);
  EXPECT_EQ(part.sampled, 3u);
  EXPECT_EQ(part.false_negative_share_bound, study::proportion_upper_bound(part.sampled_false_negatives, 3));
}

}  // namespace
}  // namespace tapegrad
