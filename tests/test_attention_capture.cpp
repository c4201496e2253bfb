// capture_attention and the attention probes (study/attention_capture.h, nn/attention_probe.h), on
// tiny double models of all three families: the captured A, S, dL/dA and dL/dS against each
// family's own map, the softmax and finite differences; forward order and naming; the built-in
// checks failing on wrong gradients; the no-probe forward unchanged.
#include <cmath>
#include <functional>
#include <limits>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "study/attention_capture.h"
#include "study/attention_sites.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/mha/multi_head_attention.h"
#include "nn/transformer/masks.h"
#include "nn/transformer/transformer.h"
#include "tests/support/nn_support.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;
using LossFn = std::function<Tensor<double>()>;

// softmax over the last axis, in double, -inf included (a row of -inf gives zeros, as tapegrad's).
Array softmax_last(const Array& s) {
  Array out = xt::zeros<double>(s.shape());
  const std::size_t n = s.shape().back();
  for (std::size_t r = 0; r < s.size() / n; ++r) {
    const double* x = s.data() + r * n;
    double m = -std::numeric_limits<double>::infinity(), z = 0;
    for (std::size_t j = 0; j < n; ++j) m = std::max(m, x[j]);
    if (m == -std::numeric_limits<double>::infinity()) continue;
    for (std::size_t j = 0; j < n; ++j) z += std::exp(x[j] - m);
    for (std::size_t j = 0; j < n; ++j) out.data()[r * n + j] = std::exp(x[j] - m) / z;
  }
  return out;
}

// The loss with S of `module` replaced by S + delta (a constant [batch, heads, seq_q, seq_k]).
double loss_with_scores_shift(nn::ProbedAttention<double>& module, const LossFn& run_loss, const Array& delta) {
  study::AttentionProbesGuard<double> probes;
  probes.attach(module, [&](nn::AttentionStage stage, const Tensor<double>& s, const Mask&) -> std::optional<Tensor<double>> {
    if (stage != nn::AttentionStage::kScores) return std::nullopt;
    return s + Tensor<double>(delta);
  });
  return run_loss().item();
}

// dL/dS of the record against central differences of the loss through a replacement probe, at
// every may-attend cell (a masked score, -inf or lowest(), absorbs any step).
void expect_scores_grad_is_finite_difference(nn::ProbedAttention<double>& module, const LossFn& run_loss,
                                             const study::AttentionRecord<double>& r) {
  const double eps = 1e-6;
  const auto& s = r.scores.shape();
  for (std::size_t e = 0; e < r.scores.size(); ++e) {
    if (!r.may_attend(e / (s[1] * s[2] * s[3]), e / s[3] % s[2], e % s[3])) continue;
    Array delta = xt::zeros<double>(r.scores.shape());
    delta.data()[e] = eps;
    const double plus = loss_with_scores_shift(module, run_loss, delta);
    delta.data()[e] = -eps;
    const double minus = loss_with_scores_shift(module, run_loss, delta);
    EXPECT_NEAR(r.scores_grad.data()[e], (plus - minus) / (2 * eps), 1e-7) << "cell " << e;
  }
}

// What every family's record must satisfy: the softmax of S is A, the checks pass, and the
// norms are those of the arrays over may-attend cells.
void expect_consistent(const study::AttentionRecord<double>& r) {
  EXPECT_LT(max_abs_diff(softmax_last(r.scores), r.weights), 1e-12);
  EXPECT_TRUE(r.check.passed) << "identity " << r.check.identity_error << " masked " << r.check.masked_grad
                              << " row sum " << r.check.row_sum_error;
  const std::size_t heads = r.weights.shape()[1];
  ASSERT_EQ(r.scores_grad_norm.size(), heads);
  for (std::size_t h = 0; h < heads; ++h) {
    double scores = 0, weights = 0;
    for (std::size_t b = 0; b < r.weights.shape()[0]; ++b)
      for (std::size_t i = 0; i < r.weights.shape()[2]; ++i)
        for (std::size_t j = 0; j < r.weights.shape()[3]; ++j)
          if (r.may_attend(b, i, j)) {
            scores += r.scores_grad(b, h, i, j) * r.scores_grad(b, h, i, j);
            weights += r.weights_grad(b, h, i, j) * r.weights_grad(b, h, i, j);
          }
    EXPECT_NEAR(r.scores_grad_norm[h], std::sqrt(scores), 1e-12);
    EXPECT_NEAR(r.weights_grad_norm[h], std::sqrt(weights), 1e-12);
  }
}

// labml: [seq, batch, d_model], mask [seq_q or 1, seq_k, batch or 1]; batch 1 may not attend to key 2.
struct Labml {
  Generator gen{11};
  nn::labml::MultiHeadAttention<double> mha{2, 4, gen, 0.1};
  Tensor<double> x = random_tensor({3, 2, 4}, 12, false), w = random_tensor({3, 2, 4}, 13, false);
  AttendMask mask = testing::mask_from({1, 3, 2}, {1, 1, 1, 1, 1, 0});
  Labml() { mha.eval(); }
  Tensor<double> loss() { return sum(mha(x, x, x, mask) * w); }
};

TEST(AttentionCapture, LabmlRecordIsItsAttentionMapInTheCanonicalLayout) {
  Labml m;
  const LossFn run = [&] { return m.loss(); };
  const auto capture = study::capture_attention<double>(m.mha, run);
  ASSERT_EQ(capture.records.size(), 1u);
  const auto& r = capture.at("");
  // attention() is [seq_q, seq_k, batch, heads]; the record [batch, heads, seq_q, seq_k].
  EXPECT_EQ(r.weights, Array(xt::transpose(m.mha.attention().value(), {2, 3, 0, 1})));
  EXPECT_EQ(r.weights_grad, Array(xt::transpose(m.mha.attention().grad(), {2, 3, 0, 1})));
  EXPECT_EQ(capture.loss, m.loss().item());
  EXPECT_FALSE(r.dropped_weights.has_value());  // eval: no dropout
  EXPECT_EQ(r.may_attend(1, 0, 2), false);
  EXPECT_EQ(r.may_attend(0, 0, 2), true);
  EXPECT_EQ(r.scores(1, 0, 1, 2), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.scores_grad(1, 1, 2, 2), 0.0);
  expect_consistent(r);
  expect_scores_grad_is_finite_difference(m.mha, run, r);
  EXPECT_FALSE(m.mha.has_attention_probes());
}

TEST(AttentionCapture, UnderNoGradGuardTheCapturesOwnTapeRecordsTheSameRecord) {
  Labml m;
  const LossFn run = [&] { return m.loss(); };
  const auto expected = study::capture_attention<double>(m.mha, run);
  const NoGradGuard paused;
  const auto under_guard = study::capture_attention<double>(m.mha, run);
  ASSERT_EQ(under_guard.records.size(), 1u);
  EXPECT_EQ(under_guard.at("").weights, expected.at("").weights);
  EXPECT_EQ(under_guard.at("").weights_grad, expected.at("").weights_grad);
  EXPECT_EQ(under_guard.loss, expected.loss);
}

TEST(AttentionCapture, MhaRecordIsItsAttentionWeights) {
  Generator gen(21);
  nn::mha::MultiHeadAttention<double> mha(4, 2, gen, 0.1);
  mha.eval();
  const Tensor<double> q = random_tensor({2, 3, 4}, 22, false), kv = random_tensor({2, 4, 4}, 23, false);
  const Tensor<double> w = random_tensor({2, 3, 4}, 24, false);
  const AttendMask padding = testing::mask_from({2, 1, 1, 4}, {1, 1, 1, 0, 1, 1, 0, 0});
  Tensor<double> weights;
  const LossFn run = [&] {
    auto out = mha(q, kv, kv, padding);
    weights = out.attention_weights;
    return sum(out.output * w);
  };
  const auto capture = study::capture_attention<double>(mha, run);
  const auto& r = capture.at("");
  EXPECT_EQ(r.weights, weights.value());
  EXPECT_EQ(r.weights_grad, weights.grad());
  EXPECT_EQ(r.may_attend(1, 2, 2), false);
  expect_consistent(r);
  expect_scores_grad_is_finite_difference(mha, run, r);
}

TEST(AttentionCapture, TransformerFamilyRecordIsItsAttentionWeights) {
  Generator gen(31);
  nn::transformer::MultiHeadAttention<double> mha(4, 2, gen);
  const Tensor<double> x = random_tensor({2, 3, 4}, 32, false), w = random_tensor({2, 3, 4}, 33, false);
  // Causal, and in batch 1 query 2 may attend to nothing.
  const AttendMask mask = testing::mask_from({2, 3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0});
  const LossFn run = [&] { return sum(mha(x, x, x, mask) * w); };
  const auto capture = study::capture_attention<double>(mha, run);
  const auto& r = capture.at("");
  const auto map = mha.attention_weights();
  EXPECT_EQ(r.weights, map.weights);
  ASSERT_TRUE(map.grad.has_value());
  EXPECT_EQ(r.weights_grad, *map.grad);
  EXPECT_EQ(r.scores(0, 1, 0, 2), std::numeric_limits<double>::lowest());  // this family's fill value
  EXPECT_EQ(r.check.fully_masked_rows, 2u);                                  // one per head
  EXPECT_NEAR(r.weights(1, 0, 2, 1), 1.0 / 3.0, 1e-15);                      // uniform, as the reference code
  expect_consistent(r);
  expect_scores_grad_is_finite_difference(mha, run, r);
}

TEST(AttentionCapture, TransformerRecordsComeInForwardOrderByPath) {
  Generator gen(41);
  nn::transformer::Transformer<double> model(5, 5, 10, 0, 4, 2, 8, 2, 0.0, 1e-5, gen);
  const IndexArray src{{1, 2, 3}, {4, 1, 0}}, tgt{{2, 3}, {1, 0}};
  const Tensor<double> w = random_tensor({2, 2, 5}, 42, false);
  const auto capture = study::capture_attention<double>(model, [&] {
    return sum(model.generator(model(src, tgt, nn::transformer::make_src_mask(src, 0),
                                     nn::transformer::make_tgt_mask(tgt, 0))) * w);
  });
  std::vector<std::string> names;
  for (const auto& r : capture.records) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "encoder.encoder_layers.0.multi_head_attention", "encoder.encoder_layers.1.multi_head_attention",
                       "decoder.decoder_layers.0.self_attention", "decoder.decoder_layers.0.src_tgt_attention",
                       "decoder.decoder_layers.1.self_attention", "decoder.decoder_layers.1.src_tgt_attention"}));
  EXPECT_TRUE(capture.checks_passed());
  // The padded source key 2 of batch 1 is masked for the cross-attention's every query.
  EXPECT_FALSE(capture.at("decoder.decoder_layers.0.src_tgt_attention").may_attend(1, 1, 2));
}

// Two attention modules registered as "late" then "early", run early, late, early.
class TwoCalls : public nn::Module<double> {
 public:
  explicit TwoCalls(Generator& gen)
      : late_(register_module("late", std::make_shared<nn::mha::MultiHeadAttention<double>>(4, 2, gen, 0.0))),
        early_(register_module("early", std::make_shared<nn::mha::MultiHeadAttention<double>>(4, 2, gen, 0.0))) {}
  std::string type_name() const override { return "TwoCalls"; }
  Tensor<double> forward(const Tensor<double>& x) {
    return (*early_)((*late_)((*early_)(x, x, x).output, x, x).output, x, x).output;
  }

 private:
  std::shared_ptr<nn::mha::MultiHeadAttention<double>> late_, early_;
};

TEST(AttentionCapture, ForwardOrderNotRegistrationOrderAndASecondCallIsNumbered) {
  Generator gen(51);
  TwoCalls model(gen);
  const Tensor<double> x = random_tensor({1, 3, 4}, 52, false);
  const auto capture = study::capture_attention<double>(model, [&] { return sum(model.forward(x)); });
  ASSERT_EQ(capture.records.size(), 3u);
  EXPECT_EQ(capture.records[0].name, "early");
  EXPECT_EQ(capture.records[1].name, "late");
  EXPECT_EQ(capture.records[2].name, "early#2");
  EXPECT_EQ(capture.records[2].module, "early");
  EXPECT_EQ(capture.records[2].call, 1u);
  EXPECT_NE(capture.records[0].weights, capture.records[2].weights);  // two calls, two inputs
  EXPECT_TRUE(capture.checks_passed());
}

TEST(AttentionCapture, IdentityCheckFailsOnAWrongGradient) {
  Labml m;
  const auto r = study::capture_attention<double>(m.mha, [&] { return m.loss(); }).at("");
  ASSERT_TRUE(study::check_softmax_backward(r.weights, r.weights_grad, r.scores_grad, r.may_attend).passed);
  Array wrong = r.scores_grad;
  wrong(0, 1, 2, 0) += 1e-6;  // one allowed cell, off by far more than rounding
  const auto perturbed = study::check_softmax_backward(r.weights, r.weights_grad, wrong, r.may_attend);
  EXPECT_FALSE(perturbed.passed);
  EXPECT_GT(perturbed.identity_error, perturbed.tolerance);
  Array leaking = r.scores_grad;
  leaking(1, 0, 1, 2) = 1e-300;  // batch 1 may not attend to key 2: must be exactly 0
  const auto masked = study::check_softmax_backward(r.weights, r.weights_grad, leaking, r.may_attend);
  EXPECT_FALSE(masked.passed);
  EXPECT_EQ(masked.masked_grad, 1e-300);
  Array unnormalised = r.weights;
  unnormalised(0, 0, 0, 0) += 1e-3;
  EXPECT_GT(study::check_softmax_backward(unnormalised, r.weights_grad, r.scores_grad, r.may_attend).row_sum_error, 9e-4);
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] { study::check_softmax_backward(r.weights, r.weights_grad, r.scores_grad, Mask(xt::ones<bool>({2, 3}))); },
      {"check_softmax_backward", "may_attend", "[2,3]", "[2,2,3,3]"}));
}

TEST(AttentionCapture, DropoutIsRecordedAndProbedInTraining) {
  Labml m;
  m.mha.train();
  const auto capture = study::capture_attention<double>(m.mha, [&] { return m.loss(); });
  const auto& r = capture.at("");
  ASSERT_TRUE(r.dropped_weights.has_value());
  EXPECT_NE(*r.dropped_weights, r.weights);
  EXPECT_TRUE(r.check.passed);  // dL/dA is the gradient reaching the softmax's output
}

TEST(AttentionCapture, ProbesAreDetachedWhenRunLossThrows) {
  Labml m;
  EXPECT_THROW(study::capture_attention<double>(m.mha, [&]() -> Tensor<double> {
                 m.loss();
                 throw ValueError("run_loss failed");
               }),
               ValueError);
  EXPECT_FALSE(m.mha.has_attention_probes());
  EXPECT_TRUE(throws_with<ValueError>([&] { study::capture_attention<double>(m.mha, [&] { return m.mha(m.x, m.x, m.x); }); },
                                      {"capture_attention", "single-element", "[3,2,4]"}));
  EXPECT_FALSE(m.mha.has_attention_probes());
}

// A probe that returns nothing leaves every family's output as it was; for nn::transformer the
// probed forward is the unfused composition (equal to rounding) and the no-probe forward is the
// fused attention_softmax, bit for bit.
TEST(AttentionProbe, NoProbeForwardIsUnchanged) {
  const nn::AttentionProbe<double> keep = [](nn::AttentionStage, const Tensor<double>&, const Mask&) {
    return std::optional<Tensor<double>>();
  };
  Labml m;
  const Array labml_before = m.mha(m.x, m.x, m.x, m.mask).value();
  const auto id = m.mha.register_attention_probe(keep);
  EXPECT_EQ(m.mha(m.x, m.x, m.x, m.mask).value(), labml_before);
  m.mha.remove_attention_probe(id);
  EXPECT_EQ(m.mha(m.x, m.x, m.x, m.mask).value(), labml_before);

  Generator gen(61);
  nn::transformer::MultiHeadAttention<double> mha(4, 2, gen);
  const Tensor<double> x = random_tensor({2, 3, 4}, 62, false);
  const Array before = mha(x, x, x).value();
  const auto probe = mha.register_attention_probe(keep);
  EXPECT_LT(max_abs_diff(mha(x, x, x).value(), before), 1e-14);
  mha.remove_attention_probe(probe);
  EXPECT_EQ(mha(x, x, x).value(), before);

  nn::transformer::ScaledDotProductAttention<double> sdpa(2);
  const Tensor<double> q = random_tensor({2, 3, 2}, 63, false), k = random_tensor({2, 4, 2}, 64, false);
  const AttendMask padding = testing::mask_from({2, 1, 4}, {1, 1, 1, 0, 1, 0, 0, 0});
  sdpa(q, k, k, padding);
  EXPECT_EQ(sdpa.last_weights().value(), attention_softmax(einsum("bqd,bkd->bqk", q, k), padding, 1.0 / std::sqrt(2.0)).value());
}

TEST(AttentionProbe, BadProbesAndMasksAreNamed) {
  Labml m;
  EXPECT_TRUE(throws_with<ValueError>([&] { m.mha.register_attention_probe({}); },
                                      {"MultiHeadAttention(heads=2, d_model=4)", "empty"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { m.mha.remove_attention_probe(123456789); }, {"no probe with id 123456789"}));
  study::AttentionProbesGuard<double> probes;
  probes.attach(m.mha, [](nn::AttentionStage, const Tensor<double>& x, const Mask&) {
    return std::optional<Tensor<double>>(sum(x, {0}));
  });
  EXPECT_TRUE(throws_with<ShapeError>([&] { m.loss(); }, {"MultiHeadAttention(heads=2, d_model=4)", "scores", "[2,2,3,3]",
                                                          "[2,3,3]"}));
  Generator gen(71);
  nn::mha::MultiHeadAttention<double> mha(4, 2, gen, 0.0);
  study::AttentionProbesGuard<double> mha_probes;
  mha_probes.attach(mha, [](nn::AttentionStage, const Tensor<double>&, const Mask&) { return std::optional<Tensor<double>>(); });
  const Tensor<double> x = random_tensor({1, 3, 4}, 72, false);
  EXPECT_TRUE(throws_with<ValueError>([&] { mha(x, x, x, AttendMask(Mask(xt::ones<bool>({1, 2, 3, 3})))); },
                                      {"same for every head", "[1,2,3,3]"}));
}

}  // namespace
}  // namespace tapegrad
