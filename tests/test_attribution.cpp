// nn/attribution: each method on a small case worked out by hand (the arithmetic is in the
// comments, and was re-done in PyTorch float64 when the tests were written), the forward-order
// property and the invariants (rollout rows sum to 1, flow within capacities, IG completeness).
// The errors for bad input are rows of docs/bad-inputs.md (tests/bad_inputs/attribution_rows.cpp).
#include <cmath>
#include <string>
#include <vector>

#include <xtensor/xio.hpp>
#include <xtensor/xview.hpp>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "autograd/base/checks.h"
#include "study/attribution.h"
#include "study/attribution/max_flow.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Maps = std::vector<xt::xarray<double>>;
constexpr double kExact = 1e-12;

// Rollout and flow case, one sequence of 2 tokens, 2 heads, 2 layers (forward order L1, L2).
//   mean_heads(L1) = [[1, 0], [.5, .5]]  ->  Â1 = .5 mean + .5 I = [[1, 0], [.25, .75]]
//   mean_heads(L2) = [[0, 1], [0, 1]]    ->  Â2 = [[.5, .5], [0, 1]]
// (rows already sum to 1, so the normalisation leaves them).
const xt::xarray<double> kL1{{{{1, 0}, {1, 0}}, {{1, 0}, {0, 1}}}};
const xt::xarray<double> kL2{{{{0, 1}, {0, 1}}, {{0, 1}, {0, 1}}}};

// Gradient-weighted case, 2 tokens, 2 heads, 2 layers, with dL/dA.
//   L1: A⊙G = h0 [[2, 0], [1, -1]], h1 [[-.5, 1], [0, 1]]; clipped and averaged Ā1 = [[1, .5], [.5, .5]]
//   L2: A⊙G = h0 [[0, 2], [0, -4]], h1 [[0, 0], [4, 0]];   Ā2 = [[0, 1], [2, 0]]
const xt::xarray<double> kA1{{{{1, 0}, {.5, .5}}, {{.5, .5}, {0, 1}}}};
const xt::xarray<double> kG1{{{{2, 1}, {2, -2}}, {{-1, 2}, {3, 1}}}};
const xt::xarray<double> kA2{{{{0, 1}, {0, 1}}, {{1, 0}, {1, 0}}}};
const xt::xarray<double> kG2{{{{5, 2}, {7, -4}}, {{0, 9}, {4, 1}}}};

xt::xarray<double> sequence(const xt::xarray<double>& batched, std::size_t b) {
  return xt::xarray<double>(xt::view(batched, b));
}

TEST(AttentionRollout, HandComputedTwoLayers) {
  // R = Â2 Â1 = [[.5·1 + .5·.25, .5·.75], [.25, .75]] = [[.625, .375], [.25, .75]]
  const auto r = study::attention_rollout<double>(Maps{kL1, kL2});
  ASSERT_EQ(r.shape(), (std::vector<std::size_t>{1, 2, 2}));
  EXPECT_LT(max_abs_diff(sequence(r, 0), xt::xarray<double>{{.625, .375}, {.25, .75}}), kExact) << r;
}

// Layers given in backward order (what a script that appends in backward hooks collects) give
// Â1 Â2 = [[.5, .5], [.125, .875]]: a different, wrong answer. The API takes forward order.
TEST(AttentionRollout, LayerOrderIsForwardOrder) {
  const auto reversed = study::attention_rollout<double>(Maps{kL2, kL1});
  EXPECT_LT(max_abs_diff(sequence(reversed, 0), xt::xarray<double>{{.5, .5}, {.125, .875}}), kExact) << reversed;
  EXPECT_GT(max_abs_diff(reversed, study::attention_rollout<double>(Maps{kL1, kL2})), 0.1);
}

// A after dropout: rows no longer sum to 1. A = [[0, 2], [0, 0]] gives .5 A + .5 I = [[.5, 1], [0, .5]]
// with row sums 1.5 and .5, so Â = [[1/3, 2/3], [0, 1]]. The keepdim bug (dividing column j by
// row j's sum) would give [[1/3, 2], [0, 1]], whose first row sums to 7/3.
TEST(AttentionRollout, NormalisesEachRowByItsOwnSum) {
  const auto r = study::attention_rollout<double>(Maps{xt::xarray<double>{{{{0, 2}, {0, 0}}}}});
  EXPECT_LT(max_abs_diff(sequence(r, 0), xt::xarray<double>{{1.0 / 3, 2.0 / 3}, {0, 1}}), kExact) << r;
}

TEST(AttentionRollout, RowsSumToOneAndSequencesAreIndependent) {
  Maps layers;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    // Non-negative maps with rows that do not sum to 1 (normalisation must cope).
    layers.push_back(xt::abs(random_tensor({2, 3, 4, 4}, seed, false).value()));
  }
  const auto r = study::attention_rollout<double>(layers);
  EXPECT_LT(max_abs_diff(xt::xarray<double>(xt::sum(r, {2})), xt::ones<double>({2, 4})), kExact);
  Maps second;
  for (const auto& l : layers) second.push_back(xt::xarray<double>(xt::view(l, xt::range(1, 2))));
  EXPECT_LT(max_abs_diff(sequence(r, 1), sequence(study::attention_rollout<double>(second), 0)), kExact);
}

// The max-flow solver on CLRS's Figure 26.1 network (s = 0, t = 5): maximum flow 23, which needs
// the residual (backward) edges to find.
TEST(MaxFlow, TextbookNetwork) {
  study::detail::MaxFlow g(6);
  const double edges[][3] = {{0, 1, 16}, {0, 2, 13}, {1, 2, 10}, {2, 1, 4}, {1, 3, 12},
                             {3, 2, 9},  {2, 4, 14}, {4, 3, 7},  {3, 5, 20}, {4, 5, 4}};
  for (const auto& e : edges) g.add_edge(std::size_t(e[0]), std::size_t(e[1]), e[2]);
  EXPECT_NEAR(g.max_flow(0, 5), 23.0, kExact);
  EXPECT_NEAR(g.max_flow(0, 5), 23.0, kExact);  // a second call starts from zero flow
  // From v1: 12 along v1 -> v3 -> t, 4 along v1 -> v2 -> v4 -> t and 6 along v1 -> v2 -> v4 -> v3 -> t,
  // all of v1's out-capacity (22).
  EXPECT_NEAR(g.max_flow(1, 5), 22.0, kExact);
}

// A network whose first shortest augmenting path (s-a-b-t, found first as s -> a and a -> b are
// added first) must be partly undone: the maximum 2 is s-a-d-t plus s-c-b-t, reached only
// through the residual edge b -> a.
TEST(MaxFlow, NeedsResidualEdges) {
  enum : std::size_t { s, a, b, c, d, t };
  study::detail::MaxFlow g(6);
  for (const auto& [from, to] : {std::pair{s, a}, {a, b}, {b, t}, {s, c}, {c, b}, {a, d}, {d, t}}) g.add_edge(from, to, 1.0);
  EXPECT_NEAR(g.max_flow(s, t), 2.0, kExact);
}

// Flow on the rollout case. Edges x_j -> y_q (layer 1) with capacity Â1[q, j], y_k -> z_i with Â2[i, k]:
//   x0->y0 1, x0->y1 .25, x1->y1 .75 (x1->y0 is 0); y0->z0 .5, y1->z0 .5, y1->z1 1 (y0->z1 is 0).
//   (z0, x0): x0->y0->z0 .5 + x0->y1->z0 .25 = .75;  (z0, x1): x1->y1->z0 min(.75, .5) = .5
//   (z1, x0): x0->y1->z1 .25;                         (z1, x1): x1->y1->z1 .75
// Normalised rows (Abnar & Zuidema's code): [[.6, .4], [.25, .75]].
TEST(AttentionFlow, HandComputedTwoLayers) {
  const auto f = study::attention_flow<double>(Maps{kL1, kL2});
  EXPECT_LT(max_abs_diff(sequence(f, 0), xt::xarray<double>{{.75, .5}, {.25, .75}}), kExact) << f;
  const auto normalized = study::attention_flow<double>(Maps{kL1, kL2}, true);
  EXPECT_LT(max_abs_diff(sequence(normalized, 0), xt::xarray<double>{{.6, .4}, {.25, .75}}), kExact) << normalized;
}

// Flow cannot exceed what enters the output token (its row of Â_L sums to 1) nor what leaves the
// input token (its column of Â_1), and with one layer it is Â itself (a single edge).
TEST(AttentionFlow, WithinCapacities) {
  const Maps layers{xt::abs(random_tensor({2, 2, 5, 5}, 11, false).value()),
                    xt::abs(random_tensor({2, 2, 5, 5}, 12, false).value()),
                    xt::abs(random_tensor({2, 2, 5, 5}, 13, false).value())};
  const auto f = study::attention_flow<double>(layers);
  const auto first = study::attention_rollout<double>(Maps{layers[0]});  // Â_1 exactly
  const auto one_layer = study::attention_flow<double>(Maps{layers[0]});
  EXPECT_LT(max_abs_diff(one_layer, first), kExact);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 5; ++j) {
        double out_of_input = 0.0;
        for (std::size_t q = 0; q < 5; ++q) out_of_input += first(b, q, j);
        EXPECT_GE(f(b, i, j), 0.0);
        EXPECT_LE(f(b, i, j), std::min(1.0, out_of_input) + kExact) << b << " " << i << " " << j;
      }
}

TEST(GradientWeightedRollout, HandComputedTwoLayers) {
  // Â1 = rownorm(Ā1 + I) = rownorm([[2, .5], [.5, 1.5]]) = [[.8, .2], [.25, .75]]
  // Â2 = rownorm([[1, 1], [2, 1]]) = [[.5, .5], [2/3, 1/3]]
  // R = Â2 Â1 = [[.4 + .125, .1 + .375], [(1.6 + .25)/3, (.4 + .75)/3]] = [[.525, .475], [37/60, 23/60]]
  const auto r = study::gradient_weighted_rollout<double>(Maps{kA1, kA2}, Maps{kG1, kG2});
  EXPECT_LT(max_abs_diff(sequence(r, 0), xt::xarray<double>{{.525, .475}, {37.0 / 60, 23.0 / 60}}), kExact) << r;
}

// Gradients collected in backward order and so reversed (the known script bug) pair each
// gradient with the wrong map; maps and gradients both reversed give Â1 Â2 = [[8/15, 7/15], [5/8, 3/8]].
TEST(GradientWeightedRollout, LayerOrderIsForwardOrder) {
  const auto forward = study::gradient_weighted_rollout<double>(Maps{kA1, kA2}, Maps{kG1, kG2});
  const auto reversed = study::gradient_weighted_rollout<double>(Maps{kA2, kA1}, Maps{kG2, kG1});
  EXPECT_LT(max_abs_diff(sequence(reversed, 0), xt::xarray<double>{{8.0 / 15, 7.0 / 15}, {.625, .375}}), kExact);
  EXPECT_GT(max_abs_diff(reversed, forward), 1e-3);  // 1/120 apart here
  const auto gradients_reversed = study::gradient_weighted_rollout<double>(Maps{kA1, kA2}, Maps{kG2, kG1});
  EXPECT_GT(max_abs_diff(gradients_reversed, forward), 1e-3);
  EXPECT_LT(max_abs_diff(xt::xarray<double>(xt::sum(forward, {2})), xt::ones<double>({1, 2})), kExact);
}

TEST(CheferRelevance, SelfAttentionHandComputed) {
  // R = (I + Ā2)(I + Ā1) = [[1, 1], [2, 1]] [[2, .5], [.5, 1.5]] = [[2.5, 2], [4.5, 2.5]]; reversed
  // order (I + Ā1)(I + Ā2) = [[3, 2.5], [3.5, 2]].
  const Maps a{kA1, kA2}, g{kG1, kG2};
  const auto r = study::chefer_self_attention_relevance<double>({a, g});
  EXPECT_LT(max_abs_diff(sequence(r, 0), xt::xarray<double>{{2.5, 2}, {4.5, 2.5}}), kExact) << r;
  const Maps ar{kA2, kA1}, gr{kG2, kG1};
  EXPECT_LT(max_abs_diff(sequence(study::chefer_self_attention_relevance<double>({ar, gr}), 0),
                         xt::xarray<double>{{3, 2.5}, {3.5, 2}}),
            kExact);
}

// Encoder: one layer (kA1, kG1), Ā_e = [[1, .5], [.5, .5]]: R_ss = I + Ā_e = [[2, .5], [.5, 1.5]],
// R̄_ss = rownorm(Ā_e) + I = [[5/3, 1/3], [.5, 1.5]].
// Decoder layer 1: self (kA2, kG2), Ā = [[0, 1], [2, 0]]: R_qq = [[1, 1], [2, 1]], R_qs stays 0.
//   cross A [[.5, .5], [1, 0]], G [[2, -1], [1, 3]]: Ā = [[1, 0], [1, 0]].
//   R̄_qq = rownorm([[0, 1], [2, 0]]) + I = [[1, 1], [1, 1]];
//   R_qs = R̄_qq^T Ā R̄_ss = [[2, 0], [2, 0]] R̄_ss = [[10/3, 2/3], [10/3, 2/3]].
// Decoder layer 2: self A [[1, 0], [.5, .5]], G [[1, 0], [2, 2]]: Ā = [[1, 0], [1, 1]].
//   R_qq += Ā R_qq = [[1, 1], [2, 1]] + [[1, 1], [3, 2]] = [[2, 2], [5, 3]]
//   R_qs += Ā R_qs = [[10/3, 2/3], [10/3, 2/3]] + [[10/3, 2/3], [20/3, 4/3]] = [[20/3, 4/3], [10, 2]]
//   cross A [[0, 1], [.5, .5]], G [[3, 1], [2, 2]]: Ā = [[0, 1], [1, 1]].
//   R̄_qq = rownorm([[1, 2], [5, 2]]) + I = [[4/3, 2/3], [5/7, 9/7]]
//   R̄_qq^T Ā = [[5/7, 43/21], [9/7, 41/21]];  · R̄_ss = [[93/42, 139/42], [131/42, 141/42]]
//   R_qs = [[20/3 + 93/42, 4/3 + 139/42], [10 + 131/42, 2 + 141/42]] = [[373, 195], [551, 225]] / 42
TEST(CheferRelevance, EncoderDecoderHandComputed) {
  const Maps enc_a{kA1}, enc_g{kG1};
  const Maps dec_a{kA2, xt::xarray<double>{{{{1, 0}, {.5, .5}}}}};
  const Maps dec_g{kG2, xt::xarray<double>{{{{1, 0}, {2, 2}}}}};
  const Maps cross_a{xt::xarray<double>{{{{.5, .5}, {1, 0}}}}, xt::xarray<double>{{{{0, 1}, {.5, .5}}}}};
  const Maps cross_g{xt::xarray<double>{{{{2, -1}, {1, 3}}}}, xt::xarray<double>{{{{3, 1}, {2, 2}}}}};
  const auto r = study::chefer_encoder_decoder_relevance<double>({enc_a, enc_g}, {dec_a, dec_g}, {cross_a, cross_g});
  EXPECT_LT(max_abs_diff(sequence(r.encoder, 0), xt::xarray<double>{{2, .5}, {.5, 1.5}}), kExact) << r.encoder;
  EXPECT_LT(max_abs_diff(sequence(r.decoder, 0), xt::xarray<double>{{2, 2}, {5, 3}}), kExact) << r.decoder;
  EXPECT_LT(max_abs_diff(sequence(r.cross, 0), xt::xarray<double>{{373, 195}, {551, 225}} / 42.0), kExact) << r.cross;
}

// A decoder token with no positive context yet (its row of R_qq - I is 0) keeps its identity row
// in R̄_qq, so the cross-attention term still counts (Chefer's code would produce NaN there and
// zero the whole term). Decoder self-attention with all gradients negative: Ā = 0, R_qq = I,
// R̄_qq = I; encoder the same, R̄_ss = I; so R_qs = Ā_cross = [[1, 0], [1, 0]].
TEST(CheferRelevance, TokensWithoutContextKeepTheirIdentityRow) {
  const Maps a{kA1}, negative{-xt::abs(kG1)};
  const Maps cross_a{xt::xarray<double>{{{{.5, .5}, {1, 0}}}}}, cross_g{xt::xarray<double>{{{{2, -1}, {1, 3}}}}};
  const auto r = study::chefer_encoder_decoder_relevance<double>({a, negative}, {a, negative}, {cross_a, cross_g});
  EXPECT_LT(max_abs_diff(sequence(r.cross, 0), xt::xarray<double>{{1, 0}, {1, 0}}), kExact) << r.cross;
}

// F(A) = sum(w ⊙ A²): ∂F/∂A at αA is 2 w ⊙ αA, so the integral is w ⊙ A and Attr = w ⊙ A². The
// m-step right Riemann sum is (1/m) Σ_k 2 w A k/m = w A (m + 1)/m, so Attr_m = w ⊙ A² (m + 1)/m:
// with A = [.25, .75, .5], w = [2, -1, 4], w ⊙ A² = [.125, -.5625, 1] and m = 4 gives ×1.25.
TEST(IntegratedGradients, QuadraticClosedForm) {
  const xt::xarray<double> a{.25, .75, .5}, w{2, -1, 4};
  std::vector<double> alphas;
  const study::AttentionGradientAt<double> grad_at = [&](double alpha) {
    alphas.push_back(alpha);
    return xt::xarray<double>(2.0 * w * alpha * a);
  };
  const auto attr = study::integrated_gradients(a, grad_at, 4);
  EXPECT_LT(max_abs_diff(attr, xt::xarray<double>{.15625, -.703125, 1.25}), kExact) << attr;
  EXPECT_EQ(alphas, (std::vector<double>{.25, .5, .75, 1.0}));
  // The default 20 steps: factor 21/20.
  EXPECT_LT(max_abs_diff(study::integrated_gradients(a, grad_at), xt::xarray<double>{.125, -.5625, 1} * 1.05), kExact);
}

// Completeness on a non-linear F of a [1, 2, 3, 3] attention map, its gradient from the tape:
// F(A) = sum(exp(A) ⊙ B) + (sum(A ⊙ C))³. sum(Attr) -> F(A) - F(0), the gap shrinking like 1/m.
TEST(IntegratedGradients, Completeness) {
  const auto a = xt::xarray<double>(xt::abs(random_tensor({1, 2, 3, 3}, 21, false).value()));
  const auto b = random_tensor({1, 2, 3, 3}, 22, false), c = random_tensor({1, 2, 3, 3}, 23, false);
  auto f = [&](const Tensor<double>& x) { return add(sum(mul(exp(x), b)), pow(sum(mul(x, c)), 3.0)); };
  const study::AttentionGradientAt<double> grad_at = [&](double alpha) {
    Tensor<double> x(xt::xarray<double>(alpha * a), true);
    GradientTape tape;
    return xt::xarray<double>(tape.gradient(f(x), {x})[0].value());
  };
  const double delta = f(Tensor<double>(a)).value()() - f(Tensor<double>(xt::zeros_like(a))).value()();
  const double gap20 = std::abs(xt::sum(study::integrated_gradients(a, grad_at))() - delta);
  const double gap400 = std::abs(xt::sum(study::integrated_gradients(a, grad_at, 400))() - delta);
  EXPECT_LT(gap400, 1e-2 * std::abs(delta)) << delta;
  EXPECT_LT(gap400, gap20 / 10) << gap20 << " " << gap400;
}

// Head importance, 2 layers × 2 heads, 2 sequences of 2 tokens, A = .5 everywhere and dL/dA
// nonzero in one cell per (layer, head, sequence), so ∂L/∂ξ = .5 × that cell:
//   layer 0: head 0: sequences 1.5 and -.5 -> mean |·| = 1 (|mean| would be .5); head 1: 1, 1 -> 1
//   layer 1: head 0: 0, 4 -> 2; head 1: -1.5, 1.5 -> 1.5
// Per-layer L2 normalisation: [1, 1] / √2, and [2, 1.5] / 2.5 = [.8, .6].
TEST(HeadImportance, HandComputed) {
  const double cells[2][2][2] = {{{3, -1}, {2, 2}}, {{0, 8}, {-3, 3}}};  // [layer][head][sequence]
  Maps a, g;
  for (std::size_t l = 0; l < 2; ++l) {
    a.push_back(xt::xarray<double>(xt::ones<double>({2, 2, 2, 2}) * 0.5));
    xt::xarray<double> grad = xt::zeros<double>({2, 2, 2, 2});
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t b = 0; b < 2; ++b) grad(b, h, 1, 0) = cells[l][h][b];
    g.push_back(grad);
  }
  EXPECT_LT(max_abs_diff(study::head_importance<double>(a, g), xt::xarray<double>{{1, 1}, {2, 1.5}}), kExact);
  const double r = 1 / std::sqrt(2.0);
  EXPECT_LT(max_abs_diff(study::head_importance<double>(a, g, true), xt::xarray<double>{{r, r}, {.8, .6}}), kExact);
}

// ∂L/∂ξ_h = Σ A ⊙ dL/dA checked against a real head mask: o = ξ · A V, L = sum(o ⊙ W).
TEST(HeadImportance, EqualsTheHeadMaskGradient) {
  const auto a = random_tensor({1, 1, 3, 3}, 31, true), v = random_tensor({1, 1, 3, 2}, 32, false);
  const auto w = random_tensor({1, 1, 3, 2}, 33, false);
  Tensor<double> xi(xt::xarray<double>{1.0}, true);
  GradientTape tape;
  const auto loss = sum(mul(mul(matmul(a, v), xi), w));
  const auto grads = tape.gradient(loss, {a, xi});
  const auto importance = study::head_importance<double>(Maps{a.value()}, Maps{grads[0].value()});
  EXPECT_NEAR(importance(0, 0), std::abs(grads[1].value()(0)), kExact);
}

// A NaN or infinite entry anywhere (a map or a gradient, any layer) is refused by every method,
// naming the function, the argument's layer and the entry's batch, head, query and key; a NaN
// gradient used to be skipped by the clip (a finite, wrong map) and an infinite weight to give NaN.
TEST(Attribution, NonFiniteEntriesAreErrorsNamingTheLayerAndTheHead) {
  const double nan = std::nan(""), inf = INFINITY;
  const auto with = [](xt::xarray<double> map, double value) {
    map(0, 1, 1, 0) = value;  // batch 0, head 1, query 1, key 0
    return map;
  };
  for (const double bad : {nan, inf, -inf}) {
    SCOPED_TRACE(bad);
    const std::string where = "holds " + format_number(bad) + " at batch 0, head 1, query 1, key 0";
    const Maps bad_a{kA1, with(kA2, bad)}, bad_g{kG1, with(kG2, bad)}, a{kA1, kA2}, g{kG1, kG2};
    EXPECT_TRUE(throws_with<ValueError>([&] { study::attention_rollout<double>(bad_a); },
                                        {"attention_rollout: attention[1] " + where}));
    EXPECT_TRUE(throws_with<ValueError>([&] { study::attention_flow<double>(bad_a); },
                                        {"attention_flow: attention[1] " + where}));
    EXPECT_TRUE(throws_with<ValueError>([&] { study::gradient_weighted_rollout<double>(a, bad_g); },
                                        {"gradient_weighted_rollout: gradients[1] " + where}));
    EXPECT_TRUE(throws_with<ValueError>([&] { study::gradient_weighted_rollout<double>(bad_a, g); },
                                        {"gradient_weighted_rollout: attention[1] " + where}));
    EXPECT_TRUE(throws_with<ValueError>([&] { study::chefer_self_attention_relevance<double>({a, bad_g}); },
                                        {"chefer_self_attention_relevance: gradients[1] " + where}));
    EXPECT_TRUE(throws_with<ValueError>([&] { study::chefer_self_attention_relevance<double>({bad_a, g}); },
                                        {"chefer_self_attention_relevance: attention[1] " + where}));
    EXPECT_TRUE(throws_with<ValueError>(
        [&] { study::chefer_encoder_decoder_relevance<double>({a, g}, {a, g}, {a, bad_g}); },
        {"chefer_encoder_decoder_relevance: cross.gradients[1] " + where}));
    EXPECT_TRUE(throws_with<ValueError>([&] { study::head_importance<double>(a, bad_g); },
                                        {"head_importance: gradients[1] " + where}));
  }
}

// A map with no heads has no mean over heads (it used to be 0/0 = NaN everywhere).
TEST(Attribution, AMapWithNoHeadsIsAShapeError) {
  const Maps none{xt::zeros<double>({1, 0, 2, 2})};
  EXPECT_TRUE(throws_with<ShapeError>([&] { study::attention_rollout<double>(none); },
                                      {"attention_rollout: attention[0] has no heads", "[1,0,2,2]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { study::chefer_self_attention_relevance<double>({none, none}); },
                                      {"chefer_self_attention_relevance: attention[0] has no heads"}));
}

// An all-zero head (an ablated one) attends nowhere. With kL1's head 0 [[1, 0], [1, 0]] and head 1
// zero: mean = [[.5, 0], [.5, 0]], .5 mean + .5 I = [[.75, 0], [.25, .5]], rows normalised to
// [[1, 0], [1/3, 2/3]]. Layers of zero heads only give the identity, finite, for every method.
TEST(Attribution, AllZeroHeadsAttendNowhereAndKeepResultsFinite) {
  xt::xarray<double> half_ablated = kL1;
  xt::view(half_ablated, 0, 1) = 0.0;
  EXPECT_LT(max_abs_diff(sequence(study::attention_rollout<double>(Maps{half_ablated}), 0),
                         xt::xarray<double>{{1, 0}, {1.0 / 3, 2.0 / 3}}),
            kExact);
  const Maps zero{xt::zeros<double>({1, 2, 2, 2}), xt::zeros<double>({1, 2, 2, 2})}, g{kG1, kG2};
  const xt::xarray<double> identity{{{1, 0}, {0, 1}}};
  EXPECT_EQ(study::attention_rollout<double>(zero), identity);
  EXPECT_EQ(study::gradient_weighted_rollout<double>(zero, g), identity);
  EXPECT_EQ(study::chefer_self_attention_relevance<double>({zero, g}), identity);
  EXPECT_EQ(study::attention_flow<double>(zero), identity);
}

// Every method's float instantiation agrees with its double one on the gradient-weighted case.
TEST(Attribution, FloatMatchesDouble) {
  const Maps a{kA1, kA2}, g{kG1, kG2};
  const std::vector<xt::xarray<float>> af{xt::cast<float>(kA1), xt::cast<float>(kA2)};
  const std::vector<xt::xarray<float>> gf{xt::cast<float>(kG1), xt::cast<float>(kG2)};
  auto close = [](const xt::xarray<float>& f, const xt::xarray<double>& d) {
    return max_abs_diff(xt::cast<double>(f), d) < 1e-5;
  };
  EXPECT_TRUE(close(study::attention_rollout<float>(af), study::attention_rollout<double>(a)));
  EXPECT_TRUE(close(study::attention_flow<float>(af), study::attention_flow<double>(a)));
  EXPECT_TRUE(close(study::gradient_weighted_rollout<float>(af, gf), study::gradient_weighted_rollout<double>(a, g)));
  EXPECT_TRUE(close(study::chefer_self_attention_relevance<float>({af, gf}),
                    study::chefer_self_attention_relevance<double>({a, g})));
  EXPECT_TRUE(close(study::chefer_encoder_decoder_relevance<float>({af, gf}, {af, gf}, {af, gf}).cross,
                    study::chefer_encoder_decoder_relevance<double>({a, g}, {a, g}, {a, g}).cross));
  EXPECT_TRUE(close(study::head_importance<float>(af, gf), study::head_importance<double>(a, g)));
  const study::AttentionGradientAt<float> grad_at = [&](float alpha) { return xt::xarray<float>(alpha * gf[0]); };
  EXPECT_TRUE(close(study::integrated_gradients(af[0], grad_at), kA1 * kG1 * 0.525));  // (1/20) Σ k/20 = 21/40
}

}  // namespace
}  // namespace tapegrad
