// study::edge_senders, edge_receivers, attribute_edges and patch_edges (study/edge_patching.h):
// which edges a Transformer has (from its architecture, written out here), exact path patching
// against the receiver's input rebuilt by hand through the layer norms, EAP against central
// differences of path patching along the patch (both residual arrangements), EAP-IG's sum into the
// output against integrated_patch, and bad input.
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "nn/layer_norm.h"
#include "nn/transformer/transformer.h"
#include "study/edge_patching.h"
#include "study/integrated_patching.h"
#include "study/scoped_point_hooks.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;

const std::string kEnc0 = "encoder.encoder_layers.0", kEnc1 = "encoder.encoder_layers.1";
const std::string kDec0 = "decoder.decoder_layers.0", kDec1 = "decoder.decoder_layers.1";

// A two-layer Transformer with two heads; the metric a weighted sum of the decoder's output.
struct EdgeModel {
  Generator gen{71};
  nn::transformer::Transformer<double> model;
  IndexArray clean_src = IndexArray({{1, 2, 3, 4, 5}, {6, 5, 4, 3, 2}});
  IndexArray corrupted_src = IndexArray({{1, 2, 6, 4, 5}, {6, 1, 4, 3, 3}});
  IndexArray clean_tgt = IndexArray({{1, 2, 3}, {1, 6, 5}});
  IndexArray corrupted_tgt = IndexArray({{1, 4, 3}, {1, 6, 2}});
  Tensor<double> weights;

  explicit EdgeModel(bool norm_first, double dropout = 0.0)
      : model(7, 7, 10, 0, 8, 2, 16, 2, dropout, 1e-5, gen, norm_first), weights(uniform({2, 3, 8}, 72)) {
    model.eval();
  }
  static Tensor<double> uniform(const Shape& shape, std::uint64_t seed) {
    Generator g(seed);
    return Tensor<double>::uniform(shape, g) * 2.0 - 1.0;
  }
  study::RunLoss<double> run(const IndexArray& src, const IndexArray& tgt) {
    return [this, src, tgt] { return sum(model(src, tgt) * weights); };
  }
  study::RunLoss<double> clean() { return run(clean_src, clean_tgt); }
  study::RunLoss<double> corrupted() { return run(corrupted_src, corrupted_tgt); }
};

std::vector<std::string> names(const std::vector<study::EdgeSender>& senders) {
  std::vector<std::string> out;
  for (const auto& s : senders) out.push_back(s.name());
  return out;
}

TEST(EdgePatching, ATransformersSendersAndReceivers) {
  EdgeModel m(false);
  const std::vector<std::string> whole = {
      kEnc0 + ".hook_resid_pre", kEnc0 + ".hook_self_attention_out", kEnc0 + ".hook_ffn_out",
      kEnc1 + ".hook_self_attention_out", kEnc1 + ".hook_ffn_out",
      kDec0 + ".hook_resid_pre", kDec0 + ".hook_self_attention_out", kDec0 + ".hook_src_tgt_attention_out",
      kDec0 + ".hook_ffn_out", kDec1 + ".hook_self_attention_out", kDec1 + ".hook_src_tgt_attention_out",
      kDec1 + ".hook_ffn_out"};
  EXPECT_EQ(names(study::edge_senders(m.model, false)), whole);

  const auto heads = study::edge_senders(m.model, true);
  ASSERT_EQ(heads.size(), 12u + 6u);  // each of the 6 attention sublayers: 2 heads for 1 out
  EXPECT_EQ(heads[1].name(), kEnc0 + ".multi_head_attention.head0");
  EXPECT_EQ(heads[1].out, kEnc0 + ".hook_self_attention_out");
  EXPECT_EQ(heads[1].result, kEnc0 + ".multi_head_attention.hook_result");
  EXPECT_EQ(heads[2].name(), kEnc0 + ".multi_head_attention.head1");
  EXPECT_EQ(heads[3].name(), kEnc0 + ".hook_ffn_out");
  EXPECT_EQ(heads[9].name(), kDec0 + ".self_attention.head1");
  EXPECT_EQ(heads[10].name(), kDec0 + ".src_tgt_attention.head0");
  EXPECT_EQ(heads[10].out, kDec0 + ".hook_src_tgt_attention_out");

  const auto receivers = study::edge_receivers(m.model, false);
  ASSERT_EQ(receivers.size(), 6u * 3u + 1u);
  EXPECT_EQ(receivers[0].name(), kEnc0 + ".multi_head_attention.hook_q_input");
  EXPECT_EQ(receivers[5].name(), kEnc1 + ".multi_head_attention.hook_v_input");
  EXPECT_EQ(receivers[9].name(), kDec0 + ".src_tgt_attention.hook_q_input");
  EXPECT_EQ(receivers[17].name(), kDec1 + ".src_tgt_attention.hook_v_input");
  EXPECT_EQ(receivers.back().name(), kDec1 + ".hook_resid_after_ffn");
  for (const auto& r : receivers) EXPECT_FALSE(r.head.has_value()) << r.name();

  const auto split = study::edge_receivers(m.model, true);
  ASSERT_EQ(split.size(), 6u * 3u * 2u + 1u);  // each attention input: 2 heads
  EXPECT_EQ(split[0].input, kEnc0 + ".multi_head_attention.hook_q_input");
  EXPECT_EQ(split[0].head, std::optional<std::size_t>(0));
  EXPECT_EQ(split[1].name(), kEnc0 + ".multi_head_attention.hook_q_input.head1");
  EXPECT_EQ(split[35].name(), kDec1 + ".src_tgt_attention.hook_v_input.head1");
  EXPECT_EQ(split.back(), receivers.back());
}

// The receivers each sender reaches, from the architecture: the encoder's outputs reach its later
// layers and every cross-attention's keys and values, never a decoder query or the decoder's
// self-attention; the decoder's reach its later receivers and the output.
TEST(EdgePatching, EdgesAreTheConnectionsTheArchitectureHas) {
  EdgeModel m(true);
  const auto senders = study::edge_senders(m.model, false);
  const auto receivers = study::edge_receivers(m.model, false);
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), study::edge_points(senders, receivers));
  const auto table = study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, receivers);
  std::map<std::string, std::set<std::string>> reached;
  for (const auto& row : table.rows) reached[row.edge.sender.name()].insert(row.edge.receiver.name());

  const auto qkv = [](const std::string& module) {
    return std::set<std::string>{module + ".hook_q_input", module + ".hook_k_input", module + ".hook_v_input"};
  };
  const auto join = [](std::initializer_list<std::set<std::string>> sets) {
    std::set<std::string> all;
    for (const auto& s : sets) all.insert(s.begin(), s.end());
    return all;
  };
  const std::set<std::string> cross_kv = {kDec0 + ".src_tgt_attention.hook_k_input", kDec0 + ".src_tgt_attention.hook_v_input",
                                          kDec1 + ".src_tgt_attention.hook_k_input", kDec1 + ".src_tgt_attention.hook_v_input"};
  const std::string output = kDec1 + ".hook_resid_after_ffn";
  EXPECT_EQ(reached[kEnc0 + ".hook_resid_pre"], join({qkv(kEnc0 + ".multi_head_attention"), qkv(kEnc1 + ".multi_head_attention"), cross_kv}));
  EXPECT_EQ(reached[kEnc0 + ".hook_ffn_out"], join({qkv(kEnc1 + ".multi_head_attention"), cross_kv}));
  EXPECT_EQ(reached[kEnc1 + ".hook_ffn_out"], cross_kv);
  EXPECT_EQ(reached[kDec0 + ".hook_resid_pre"],
            join({qkv(kDec0 + ".self_attention"), {kDec0 + ".src_tgt_attention.hook_q_input"}, qkv(kDec1 + ".self_attention"),
                  {kDec1 + ".src_tgt_attention.hook_q_input", output}}));
  EXPECT_EQ(reached[kDec0 + ".hook_self_attention_out"],
            join({{kDec0 + ".src_tgt_attention.hook_q_input"}, qkv(kDec1 + ".self_attention"),
                  {kDec1 + ".src_tgt_attention.hook_q_input", output}}));
  EXPECT_EQ(reached[kDec1 + ".hook_ffn_out"], std::set<std::string>{output});
  std::size_t edges = 0;
  for (const auto& [sender, set] : reached) edges += set.size();
  EXPECT_EQ(edges, table.rows.size());
  EXPECT_EQ(table.rows.size(), 10u + 7u + 7u + 4u + 4u + 9u + 6u + 5u + 5u + 2u + 1u + 1u);
}

// Post-LN: enc0's self-attention output reaches enc1's input only through the two layer norms of
// enc0: r' = LN_ffn(LN_sa(x + out_source) + ffn_out), everything else at the target's. Rebuilt by
// hand with the model's own layer norms and patched in; patch_edges gives the same metric.
TEST(EdgePatching, ExactEdgeIsTheReceiversInputRebuiltThroughTheLayerNorms) {
  EdgeModel m(false);
  const auto senders = study::edge_senders(m.model, false);
  const study::EdgeReceiver receiver{kEnc1 + ".multi_head_attention.hook_q_input"};
  const std::vector<std::string> points = {kEnc0 + ".hook_resid_pre", kEnc0 + ".hook_self_attention_out",
                                           kEnc0 + ".hook_ffn_out"};
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), study::edge_points(senders, {receiver}));
  const auto target = study::run_with_cache<double>(m.model, m.corrupted(), points);

  auto& norm_sa = dynamic_cast<nn::LayerNorm<double>&>(m.model.get_submodule(kEnc0 + ".layer_norm_self_attention"));
  auto& norm_ffn = dynamic_cast<nn::LayerNorm<double>&>(m.model.get_submodule(kEnc0 + ".layer_norm_ffn"));
  Array rebuilt;
  {
    NoGradGuard no_grad;
    rebuilt = norm_ffn(norm_sa(Tensor<double>(target.value(points[0]) + clean.value(points[1]))) +
                       Tensor<double>(target.value(points[2])))
                  .value();
  }
  double by_hand = 0;
  {
    study::ScopedPointHooks<double> hooks;
    hooks.add(m.model.hook_point(receiver.input), [&](const Tensor<double>&) -> std::optional<Tensor<double>> {
      return Tensor<double>(rebuilt);
    });
    NoGradGuard no_grad;
    by_hand = m.corrupted()().item();
  }
  const auto table = study::patch_edges<double>(m.model, m.corrupted(), clean, senders, {{senders[1], receiver}});
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_NEAR(table.rows[0].effect, by_hand - table.target_metric, 1e-12);
  EXPECT_GT(std::abs(table.rows[0].effect), 1e-3) << "the edge must move the metric for this to mean anything";
}

// A source moved by eps of the patch on every sender's points: path patching of an edge is then
// f(eps), and EAP is f'(0).
study::ActivationCache<double> part_way(const study::ActivationCache<double>& target,
                                        const study::ActivationCache<double>& source, double eps) {
  study::ActivationCache<double> moved;
  for (const auto& [name, value] : target.values) moved.values[name] = value + eps * (source.value(name) - value);
  return moved;
}

// (pre-LN, receivers split into heads)
class EdgeAttribution : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

// EAP of every edge, heads as senders, against central differences of exact path patching along
// the patch: the Jacobian through the frozen graph and the receiver's gradient (for a head's
// receiver, through its projection) are right, and the two methods mean the same edge.
TEST_P(EdgeAttribution, EAPIsTheDerivativeOfPathPatchingAlongThePatch) {
  const auto [norm_first, split] = GetParam();
  EdgeModel m(norm_first);
  const auto senders = study::edge_senders(m.model, true);
  const auto receivers = study::edge_receivers(m.model, split);
  const auto points = study::edge_points(senders, receivers);
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), points);
  const auto target = study::run_with_cache<double>(m.model, m.corrupted(), points);
  const auto eap = study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, receivers);
  // EdgesAreTheConnectionsTheArchitectureHas' 61, an attention out's twice: 86, of which 11 into the
  // output (the decoder's embedding, 4 heads, 2 feed-forwards, 4 heads); split, each of the other 75
  // is two.
  ASSERT_EQ(eap.rows.size(), split ? 2u * 75u + 11u : 86u);
  EXPECT_EQ(eap.target_metric, target.metric);
  EXPECT_EQ(eap.source_metric, clean.metric);
  const double eps = 1e-4;
  const auto ahead = study::patch_edges<double>(m.model, m.corrupted(), part_way(target, clean, eps), senders,
                                                study::edges_of(eap));
  const auto behind = study::patch_edges<double>(m.model, m.corrupted(), part_way(target, clean, -eps), senders,
                                                 study::edges_of(eap));
  double largest = 0;
  for (std::size_t i = 0; i < eap.rows.size(); ++i) {
    const double derivative = (ahead.rows[i].effect - behind.rows[i].effect) / (2 * eps);
    EXPECT_NEAR(eap.rows[i].effect, derivative, 1e-6 * (1 + std::abs(derivative)))
        << eap.rows[i].edge.sender.name() << " -> " << eap.rows[i].edge.receiver.name();
    largest = std::max(largest, std::abs(derivative));
  }
  EXPECT_GT(largest, 0.05);
}

INSTANTIATE_TEST_SUITE_P(BothResidualArrangements, EdgeAttribution,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()), [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "PreLN" : "PostLN") +
                                  (std::get<1>(info.param) ? "ReceiversPerHead" : "");
                         });

// A head's query, key or value projection reads the whole input through its own slice of the
// weights, so the heads' gradients pulled back through their slices sum to the input's: the EAP of
// an edge into an input split into heads sums over the heads to its EAP into the whole input.
TEST(EdgePatching, EAPIntoEachHeadSumsToEAPIntoTheWholeInput) {
  EdgeModel m(false);
  const auto senders = study::edge_senders(m.model, true);
  const auto whole = study::edge_receivers(m.model, false);
  const auto split = study::edge_receivers(m.model, true);
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), study::edge_points(senders, split));
  const auto by_input = study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, whole);
  const auto by_head = study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, split);
  std::map<std::string, double> summed;
  for (const auto& row : by_head.rows) summed[row.edge.sender.name() + "|" + row.edge.receiver.input] += row.effect;
  ASSERT_EQ(summed.size(), by_input.rows.size());
  double largest_share = 0;
  for (const auto& row : by_input.rows) {
    const std::string key = row.edge.sender.name() + "|" + row.edge.receiver.input;
    EXPECT_NEAR(summed.at(key), row.effect, 1e-12 * (1 + std::abs(row.effect))) << key;
  }
  // And the heads differ: the split is not the whole divided evenly.
  for (std::size_t i = 0; i + 1 < by_head.rows.size(); ++i) {
    const auto& a = by_head.rows[i];
    const auto& b = by_head.rows[i + 1];
    if (a.edge.receiver.input != b.edge.receiver.input || a.edge.sender.name() != b.edge.sender.name()) continue;
    largest_share = std::max(largest_share, std::abs(a.effect - b.effect) / (std::abs(a.effect) + std::abs(b.effect) + 1e-300));
  }
  EXPECT_GT(largest_share, 0.1);
}

// A head's receiver patched by hand: the moved input projected by the model itself (the module's
// hook_q read in a run with the input replaced), only that head's slice kept in the target run.
TEST(EdgePatching, ExactEdgeIntoOneHeadReplacesOnlyThatHeadsQueries) {
  EdgeModel m(true);
  const auto senders = study::edge_senders(m.model, false);
  const std::string module = kDec1 + ".src_tgt_attention";
  const study::EdgeReceiver whole{module + ".hook_q_input"}, head1{module + ".hook_q_input", 1};
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), study::edge_points(senders, {head1}));
  const auto exact_whole = study::patch_edges<double>(m.model, m.corrupted(), clean, senders, {{senders[5], whole}});
  // The whole input's patched value, as patch_edges' own forward reads it: the target run's input
  // plus the effect of the sender, rebuilt here by patching its out into frozen outs.
  Array moved_input, target_q, moved_q;
  const auto target = study::run_with_cache<double>(m.model, m.corrupted(), study::edge_points(senders, {head1}));
  {
    study::ScopedPointHooks<double> hooks;
    for (const auto& s : senders) {
      const Array value = s.out == senders[5].out ? Array(clean.value(s.out)) : Array(target.value(s.out));
      hooks.add(m.model.hook_point(s.out), [value](const Tensor<double>&) -> std::optional<Tensor<double>> { return Tensor<double>(value); });
    }
    hooks.add(m.model.hook_point(whole.input), [&](const Tensor<double>& x) -> std::optional<Tensor<double>> {
      moved_input = x.value();
      return std::nullopt;
    });
    NoGradGuard no_grad;
    m.corrupted()();
  }
  {
    study::ScopedPointHooks<double> hooks;
    hooks.add(m.model.hook_point(whole.input), [&](const Tensor<double>&) -> std::optional<Tensor<double>> { return Tensor<double>(moved_input); });
    hooks.add(m.model.hook_point(module + ".hook_q"), [&](const Tensor<double>& q) -> std::optional<Tensor<double>> {
      moved_q = q.value();
      return std::nullopt;
    });
    NoGradGuard no_grad;
    m.corrupted()();
  }
  Array kept = target.value(module + ".hook_q");
  xt::view(kept, xt::all(), 1) = xt::view(moved_q, xt::all(), 1);
  double by_hand = 0;
  {
    study::ScopedPointHooks<double> hooks;
    hooks.add(m.model.hook_point(module + ".hook_q"), [&](const Tensor<double>&) -> std::optional<Tensor<double>> { return Tensor<double>(kept); });
    NoGradGuard no_grad;
    by_hand = m.corrupted()().item();
  }
  const auto exact_head = study::patch_edges<double>(m.model, m.corrupted(), clean, senders, {{senders[5], head1}});
  EXPECT_NEAR(exact_head.rows[0].effect, by_hand - exact_head.target_metric, 1e-12);
  EXPECT_GT(std::abs(exact_head.rows[0].effect), 1e-4) << "the edge must move the metric for this to mean anything";
  EXPECT_GT(std::abs(exact_head.rows[0].effect - exact_whole.rows[0].effect), 1e-4) << "one head is not the whole input";
}

// Pre-LN: the output residual is the sum of every sender's out, so the EAP-IG scores of the edges
// into it sum to the patch of the whole output dotted with its mean gradient: integrated_patch's
// estimate for that point, with the same interpolation.
TEST(EdgePatching, EAPIGIntoThePreLNOutputSumsToIntegratedPatchingOfTheOutput) {
  EdgeModel m(true);
  const auto senders = study::edge_senders(m.model, true);
  const study::EdgeReceiver output{kDec1 + ".hook_resid_after_ffn"};
  const std::vector<std::string> inputs = {kEnc0 + ".hook_resid_pre", kDec0 + ".hook_resid_pre"};
  auto points = study::edge_points(senders, {output});
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), points);
  const auto eap_ig = study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, {output},
                                                     {.ig_steps = 4, .interpolate_at = inputs});
  double edges = 0;
  for (const auto& row : eap_ig.rows) edges += row.effect;
  const auto node = study::integrated_patch<double>(m.model, m.corrupted(), clean, {output.input}, 0,
                                                    {.steps = 4, .interpolate_at = inputs});
  double whole = 0;
  for (const auto& row : node.rows) whole += row.atp;
  EXPECT_NEAR(edges, whole, 1e-10 * (1 + std::abs(whole)));
  EXPECT_GT(std::abs(whole), 1e-2);
  const auto eap = study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, {output});
  double eap_sum = 0;
  for (const auto& row : eap.rows) eap_sum += row.effect;
  EXPECT_GT(std::abs(eap_sum - edges), 1e-6) << "EAP-IG must differ from EAP on a nonlinear model";
}

// A caller's own tape alive, or a NoGradGuard: the same estimates and patches, bit for bit, and no
// parameter's grad() changes (the walks are the functions' own).
TEST(EdgePatching, ACallersTapeOrNoGradGuardChangesNothing) {
  EdgeModel m(true);
  const auto senders = study::edge_senders(m.model, true);
  const auto receivers = study::edge_receivers(m.model, false);
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), study::edge_points(senders, receivers));
  const auto eap = study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, receivers);
  const auto exact = study::patch_edges<double>(m.model, m.corrupted(), clean, senders, study::edges_of(eap));
  const auto same = [&](const char* context) {
    const auto again = study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, receivers);
    const auto patched = study::patch_edges<double>(m.model, m.corrupted(), clean, senders, study::edges_of(eap));
    ASSERT_EQ(again.rows.size(), eap.rows.size()) << context;
    for (std::size_t i = 0; i < eap.rows.size(); ++i) {
      EXPECT_EQ(again.rows[i].effect, eap.rows[i].effect) << context << " " << i;
      EXPECT_EQ(patched.rows[i].effect, exact.rows[i].effect) << context << " " << i;
    }
  };
  m.model.zero_grad();
  {
    GradientTape outer(/*persistent=*/true);
    same("under a caller's tape");
  }
  {
    NoGradGuard guard;
    same("under NoGradGuard");
  }
  for (const Tensor<double>& parameter : m.model.parameters())
    EXPECT_FALSE(parameter.has_grad() && xt::any(xt::not_equal(parameter.grad(), 0.0)));
}

TEST(EdgePatching, BadInputIsRefusedNamingTheProblem) {
  EdgeModel m(false);
  const auto senders = study::edge_senders(m.model, true);
  const auto receivers = study::edge_receivers(m.model, false);
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), study::edge_points(senders, receivers));
  const auto run = m.corrupted();
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, {}, receivers); }, {"attribute_edges: no senders"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, senders, {}); }, {"attribute_edges: no receivers"}));
  using Receivers = std::vector<study::EdgeReceiver>;
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, senders, Receivers{{senders[3].out}}); }, {"is both a receiver and a sender's out"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, senders, {receivers[0], receivers[1], receivers[0]}); },
                                      {"attribute_edges: the receiver '" + receivers[0].name() + "' is named twice"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, senders, Receivers{{"decoder.nope"}}); }, {"has no hook point 'nope'"}));
  const study::EdgeReceiver head0{receivers[0].input, 0};
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, senders, {head0, receivers[1], head0}); },
                                      {"the receiver '" + receivers[0].input + ".head0' is named twice"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, senders, {head0, receivers[0]}); },
                                      {"the receiver '" + receivers[0].input + "' is named both whole and split into heads"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_edges<double>(m.model, run, clean, senders, {{senders[1], head0}, {senders[1], receivers[0]}}); },
                                      {"patch_edges: the receiver '" + receivers[0].input + "' is named both whole and split into heads"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, senders, Receivers{{receivers.back().input, 0}}); },
                                      {"names a head of a point that is not an attention module's hook_q_input"}));
  const auto split = study::edge_receivers(m.model, true);
  const auto split_clean = study::run_with_cache<double>(m.model, m.clean(), study::edge_points(senders, split));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_edges<double>(m.model, run, split_clean, senders, {{senders[1], {receivers[3].input, 2}}}); },
                                      {"patch_edges: the receiver '" + receivers[3].input + ".head2' is past the heads of '" + kEnc1 + ".multi_head_attention.hook_q', [2,2,5,4]"}));
  study::EdgeSender past = senders[1];
  past.head = 2;
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, {past}, receivers); }, {"head 2 of it cannot add to"}));
  // The decoder's cross-attention heads paired with its self-attention's out: same shapes, wrong sum.
  const study::EdgeSender mispaired{kDec0 + ".hook_self_attention_out", kDec0 + ".src_tgt_attention.hook_result", 0};
  const auto wide = study::run_with_cache<double>(m.model, m.clean(), study::edge_points({mispaired}, receivers));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, wide, {mispaired}, receivers); }, {"do not sum to '" + kDec0 + ".hook_self_attention_out'"}));
  study::ActivationCache<double> missing = clean;
  missing.values.erase(kEnc0 + ".hook_ffn_out");
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, missing, senders, receivers); }, {"the source cached nothing at '" + kEnc0 + ".hook_ffn_out'"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, run, clean, senders, receivers, {.ig_steps = 3}); }, {"EAP-IG needs both ig_steps and interpolate_at"}));
  const study::RunLoss<double> other_tgt = [&] { return sum(m.model(m.corrupted_src, IndexArray({{1, 4}, {1, 6}}))); };
  EXPECT_TRUE(throws_with<ShapeError>([&] { study::attribute_edges<double>(m.model, other_tgt, clean, senders, receivers); }, {"in the target run but"}));
  const study::RunLoss<double> twice = [&] { return run() + run(); };
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, twice, clean, senders, receivers); }, {"more than once"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_edges<double>(m.model, run, clean, {senders[0]}, {{senders[1], receivers[0]}}); }, {"is not among the senders"}));
}

TEST(EdgePatching, TrainingModeWithActiveDropoutIsRefused) {
  EdgeModel m(false, /*dropout=*/0.1);
  const auto senders = study::edge_senders(m.model, false);
  const auto receivers = study::edge_receivers(m.model, false);
  const auto clean = study::run_with_cache<double>(m.model, m.clean(), study::edge_points(senders, receivers));
  m.model.train();
  EXPECT_TRUE(throws_with<ValueError>([&] { study::patch_edges<double>(m.model, m.corrupted(), clean, senders, {{senders[1], receivers[3]}}); },
                                      {"patch_edges", "dropout is active in '"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { study::attribute_edges<double>(m.model, m.corrupted(), clean, senders, receivers); },
                                      {"attribute_edges", "dropout is active in '"}));
}

}  // namespace
}  // namespace tapegrad
