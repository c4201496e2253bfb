// Interventions on one attention head (study/attention_intervention.h): gradients through the
// replacement, the change in loss, the head-ablation table and the named errors.
#include <cmath>
#include <functional>
#include <memory>
#include <type_traits>

#include <xtensor/xview.hpp>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "study/attention_capture.h"
#include "study/attention_intervention.h"
#include "study/attention_sites.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/transformer/masks.h"
#include "nn/transformer/transformer.h"
#include "tests/support/nn_support.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;
using LossFn = std::function<Tensor<double>()>;
const std::string kCross = "decoder.decoder_layers.0.src_tgt_attention";

// A two-layer Transformer (d_model 4, 2 heads) on a padded batch of two.
struct PaddedTransformer {
  Generator gen{81};
  nn::transformer::Transformer<double> model{5, 5, 10, 0, 4, 2, 8, 2, 0.0, 1e-5, gen};
  IndexArray src{{1, 2, 3}, {4, 1, 0}}, tgt{{2, 3}, {1, 0}};
  Tensor<double> w = random_tensor({2, 2, 5}, 82, false);
  LossFn run = [this] {
    return sum(model.generator(model(src, tgt, nn::transformer::make_src_mask(src, 0),
                                     nn::transformer::make_tgt_mask(tgt, 0))) * w);
  };
};

TEST(AttentionIntervention, GradientFlowsThroughAScaledHead) {
  PaddedTransformer t;
  EXPECT_TRUE(passes_gradcheck(
      [&](const Inputs& in) {
        study::AttentionInterventions<double> edits(t.model);
        edits.scale(kCross, 1, in[0]);  // A[:, 1] := c A[:, 1]
        return t.run();
      },
      {Tensor<double>(Array(0.7), true)}));
}

TEST(AttentionIntervention, GradientFlowsThroughAReplacedScoresHead) {
  Generator gen(83);
  nn::labml::MultiHeadAttention<double> mha(2, 4, gen, 0.0);
  const Tensor<double> x = random_tensor({3, 2, 4}, 84, false), w = random_tensor({3, 2, 4}, 85, false);
  EXPECT_TRUE(passes_gradcheck(
      [&](const Inputs& in) {
        study::AttentionInterventions<double> edits(mha);
        edits.replace("", 0, in[0], nn::AttentionStage::kScores);  // S[:, 0] := R [batch, seq_q, seq_k]
        return sum(mha(x, x, x) * w);
      },
      {random_tensor({2, 3, 3}, 86)}));
}

TEST(AttentionIntervention, AblatingAHeadChangesTheLossAndScalingByOneDoesNot) {
  PaddedTransformer t;
  const auto ablate = [&](study::Ablation kind) {
    return study::loss_change<double>(t.model, t.run, [&](auto& e) { e.ablate(kCross, 0, kind); });
  };
  EXPECT_GT(std::abs(ablate(study::Ablation::kZero)), 1e-6);
  EXPECT_GT(std::abs(ablate(study::Ablation::kUniform)), 1e-6);
  EXPECT_EQ(study::loss_change<double>(t.model, t.run, [&](auto& e) { e.scale(kCross, 0, 1.0); }), 0.0);
  EXPECT_EQ(study::loss_change<double>(t.model, t.run,
                                       [&](auto& e) { e.scale(kCross, 0, 1.0, nn::AttentionStage::kScores); }),
            0.0);
  EXPECT_TRUE(study::named_attention_modules(t.model)[0].second->has_attention_probes() == false);  // detached
}

TEST(AttentionIntervention, CaptureSeesTheAblatedWeights) {
  PaddedTransformer t;
  study::AttentionInterventions<double> edits(t.model);
  edits.ablate(kCross, 1, study::Ablation::kUniform);
  edits.ablate("encoder.encoder_layers.0.multi_head_attention", 0, study::Ablation::kZero);
  const auto capture = study::capture_attention<double>(t.model, t.run);
  const auto& cross = capture.at(kCross);
  // Batch 1's source {4, 1, pad}: uniform 1/2 over keys 0 and 1 for every query.
  EXPECT_EQ(Array(xt::view(cross.weights, 1, 1)), (Array{{0.5, 0.5, 0.0}, {0.5, 0.5, 0.0}}));
  EXPECT_NE(Array(xt::view(cross.weights, 1, 0)), (Array{{0.5, 0.5, 0.0}, {0.5, 0.5, 0.0}}));
  EXPECT_EQ(Array(xt::view(capture.at("encoder.encoder_layers.0.multi_head_attention").weights, xt::all(), 0)),
            Array(xt::zeros<double>({2, 3, 3})));
}

TEST(AttentionIntervention, HeadAblationTableHasEveryModuleAndHeadInForwardOrder) {
  PaddedTransformer t;
  const auto table = study::head_ablation_table<double>(t.model, t.run);
  EXPECT_EQ(table.clean_loss, t.run().item());
  ASSERT_EQ(table.rows.size(), 12u);  // 6 modules x 2 heads
  EXPECT_EQ(table.rows[0].module, "encoder.encoder_layers.0.multi_head_attention");
  EXPECT_EQ(table.rows[7].module, "decoder.decoder_layers.0.src_tgt_attention");
  EXPECT_EQ(table.rows[7].head, 1u);
  EXPECT_EQ(table.rows[7].change,
            study::loss_change<double>(t.model, t.run, [&](auto& e) { e.ablate(kCross, 1); }));
  EXPECT_EQ(table.rows[7].loss - table.clean_loss, table.rows[7].change);
}

TEST(AttentionIntervention, BadPathsHeadsAndShapesAreNamed) {
  PaddedTransformer t;
  study::AttentionInterventions<double> edits(t.model);
  EXPECT_TRUE(throws_with<ValueError>([&] { edits.ablate("encoder.nope", 0); },
                                      {"AttentionInterventions::ablate", "'encoder.nope'", "'" + kCross + "'"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { edits.scale(kCross, 2, 0.5); },
                                      {"AttentionInterventions::scale", "head 2", kCross, "2 heads"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { edits.scale(kCross, 0, Tensor<double>(Array{1.0, 2.0})); },
                                      {"AttentionInterventions::scale", "factor", "[2]"}));
  edits.replace(kCross, 0, random_tensor({2, 2, 2}, 87));  // cross-attention is [2, 2, 3]
  EXPECT_TRUE(throws_with<ShapeError>(t.run, {"AttentionInterventions::replace", "head 0", kCross, "[2,2,2]", "[2,2,3]"}));
}

// Interventions (and the probes they hold) may be destroyed before or after their model.
TEST(AttentionIntervention, DetachingIsSafeWhicheverOfTheModelAndTheInterventionsIsDestroyedFirst) {
  Generator gen(88);
  const Tensor<double> x = random_tensor({3, 2, 4}, 89, false);
  auto model = std::make_unique<nn::labml::MultiHeadAttention<double>>(2, 4, gen, 0.0);
  const Array clean = (*model)(x, x, x).value();
  auto edits = std::make_unique<study::AttentionInterventions<double>>(*model);
  edits->ablate("", 0);
  EXPECT_GT(max_abs_diff((*model)(x, x, x).value(), clean), 1e-6);
  edits.reset();  // interventions first: the model runs clean again
  EXPECT_FALSE(model->has_attention_probes());
  EXPECT_EQ((*model)(x, x, x).value(), clean);

  edits = std::make_unique<study::AttentionInterventions<double>>(*model);
  edits->scale("", 1, 0.5);
  study::AttentionProbesGuard<double> probes;
  probes.attach(*model, [](nn::AttentionStage, const Tensor<double>&, const Mask&) { return std::nullopt; });
  model.reset();  // the model first: destroying what was attached to it must not touch it
  edits.reset();
}

// A module cannot be copied or moved out from under the probes attached to it.
static_assert(!std::is_copy_constructible_v<nn::labml::MultiHeadAttention<double>> &&
              !std::is_move_constructible_v<nn::labml::MultiHeadAttention<double>> &&
              !std::is_copy_assignable_v<nn::ProbedAttention<double>>);

// Two edits of one head compose in the order they were made.
TEST(AttentionIntervention, TwoScalesOfOneHeadMultiply) {
  PaddedTransformer t;
  const double twice = study::loss_change<double>(t.model, t.run, [&](auto& e) {
    e.scale(kCross, 0, 0.5);
    e.scale(kCross, 0, 0.5);
  });
  EXPECT_EQ(twice, study::loss_change<double>(t.model, t.run, [&](auto& e) { e.scale(kCross, 0, 0.25); }));
  EXPECT_GT(std::abs(twice), 1e-6);
}

}  // namespace
}  // namespace tapegrad
