// Hook points (nn/hook_point.h, nn/attention_hook_points.h) and finding things by path
// (Module::named_modules, get_submodule, named_hook_points, hook_point), in the three multi-head
// attention families: what each point holds, against the scores and weights the probes see and the
// module's own parameters; that hooks keeping their tensor change no bit; that a replacement
// reaches the output; that the gradient a gradient hook sees is dL/d(point) by central
// differences; and bad input.
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "autograd/core/tape.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/layer_norm.h"
#include "nn/mha/multi_head_attention.h"
#include "nn/transformer/transformer.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

namespace tf = nn::transformer;
using Array = xt::xarray<double>;

constexpr std::size_t kBatch = 2, kSeqQ = 3, kSeqK = 4, kDModel = 4, kHeads = 2, kDk = 2;
const std::vector<std::string> kPoints = {"hook_q_input", "hook_k_input", "hook_v_input", "hook_q", "hook_k",
                                          "hook_v", "hook_attn_scores", "hook_pattern", "hook_z", "hook_result"};

// A leaf that requires a gradient, as a model's inputs to an attention module do (the input points
// hook nothing on a tensor that needs none).
Tensor<double> random_input(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return Tensor<double>((Tensor<double>::uniform(shape, gen) * 2.0 - 1.0).value(), /*requires_grad=*/true);
}

// One family's multi-head attention in a cross-attention call (seq_q != seq_k, so a point in the
// wrong layout cannot pass) whose mask blocks key 1 of batch row 1, and a loss weighting every
// output element differently.
struct CrossAttention {
  std::string family;
  std::shared_ptr<nn::Module<double>> module;
  nn::ProbedAttention<double>* probed = nullptr;
  const nn::Linear<double>* projection = nullptr;  // the output projection
  bool sequence_first = false;                     // labml: inputs and output [seq, batch, d_model]
  std::function<Tensor<double>()> output;
  Tensor<double> weights;
  // output() with the key input replaced by `keys` (the family's layout), the values unchanged.
  std::function<Tensor<double>(const Tensor<double>& keys)> with_keys;

  // The output as [batch, seq_q, d_model].
  Array batch_first_output() {
    const Array out = output().value();
    return sequence_first ? Array(xt::transpose(out, {1, 0, 2})) : out;
  }
  nn::HookPoint<double>& point(const std::string& name) { return module->hook_point(name); }
};

CrossAttention transformer_family() {
  Generator gen(71);
  auto m = std::make_shared<tf::MultiHeadAttention<double>>(kDModel, kHeads, gen);
  const Tensor<double> q = random_input({kBatch, kSeqQ, kDModel}, 1), kv = random_input({kBatch, kSeqK, kDModel}, 2);
  const AttendMask mask(Mask(xt::xarray<bool>({{{true, true, true, true}}, {{true, false, true, true}}})));
  return {"nn::transformer", m, m.get(), &m->linear(), false, [=] { return (*m)(q, kv, kv, mask); },
          random_input({kBatch, kSeqQ, kDModel}, 3), [=](const Tensor<double>& keys) { return (*m)(q, keys, kv, mask); }};
}

CrossAttention batch_first_family() {
  Generator gen(72);
  auto m = std::make_shared<nn::mha::MultiHeadAttention<double>>(kDModel, kHeads, gen, /*dropout=*/0.0);
  const Tensor<double> q = random_input({kBatch, kSeqQ, kDModel}, 1), kv = random_input({kBatch, kSeqK, kDModel}, 2);
  const AttendMask mask(Mask(xt::xarray<bool>({{{{true, true, true, true}}}, {{{true, false, true, true}}}})));
  return {"nn::mha", m, m.get(), &m->proj(), false, [=] { return (*m)(q, kv, kv, mask).output; },
          random_input({kBatch, kSeqQ, kDModel}, 3),
          [=](const Tensor<double>& keys) { return (*m)(q, keys, kv, mask).output; }};
}

CrossAttention labml_family() {
  Generator gen(73);
  auto m = std::make_shared<nn::labml::MultiHeadAttention<double>>(kHeads, kDModel, gen, /*dropout_prob=*/0.0);
  const Tensor<double> q = random_input({kSeqQ, kBatch, kDModel}, 1), kv = random_input({kSeqK, kBatch, kDModel}, 2);
  // [1, seq_k, batch]: key 1 blocked for batch row 1
  const AttendMask mask(Mask(xt::xarray<bool>({{{true, true}, {true, false}, {true, true}, {true, true}}})));
  return {"nn::labml", m, m.get(), &m->output(), true, [=] { return (*m)(q, kv, kv, mask); },
          random_input({kSeqQ, kBatch, kDModel}, 3), [=](const Tensor<double>& keys) { return (*m)(q, keys, kv, mask); }};
}

std::vector<CrossAttention> families() { return {transformer_family(), batch_first_family(), labml_family()}; }

// The tensor a point holds in the forward, read by a forward hook.
Array read_point(CrossAttention& c, const std::string& point) {
  Array seen;
  nn::HookPoint<double>& p = c.point(point);
  const auto id = p.add_forward_hook([&](const Tensor<double>& x) {
    seen = x.value();
    return std::nullopt;
  });
  c.output();
  p.remove_hook(id);
  return seen;
}

// The scores S or weights A of the last forward, [batch, heads, seq_q, seq_k], read by a probe.
Array read_stage(CrossAttention& c, nn::AttentionStage stage) {
  Array seen;
  const auto id = c.probed->register_attention_probe([&](nn::AttentionStage s, const Tensor<double>& x, const Mask&) {
    if (s == stage) seen = x.value();
    return std::nullopt;
  });
  c.output();
  c.probed->remove_attention_probe(id);
  return seen;
}

TEST(HookPoints, QueriesAndKeysGiveTheScoresInEveryFamily) {
  for (CrossAttention c : families()) {
    const Array q = read_point(c, "hook_q"), k = read_point(c, "hook_k");
    ASSERT_EQ(q.shape(), (Shape{kBatch, kHeads, kSeqQ, kDk})) << c.family;
    ASSERT_EQ(k.shape(), (Shape{kBatch, kHeads, kSeqK, kDk})) << c.family;
    const Array S = read_stage(c, nn::AttentionStage::kScores);
    for (std::size_t b = 0; b < kBatch; ++b)
      for (std::size_t h = 0; h < kHeads; ++h)
        for (std::size_t i = 0; i < kSeqQ; ++i)
          for (std::size_t j = 0; j < kSeqK; ++j) {
            if (b == 1 && j == 1) continue;  // masked
            double dot = 0;
            for (std::size_t d = 0; d < kDk; ++d) dot += q(b, h, i, d) * k(b, h, j, d);
            EXPECT_NEAR(S(b, h, i, j), dot / std::sqrt(double(kDk)), 1e-14) << c.family;
          }
  }
}

// hook_attn_scores and hook_pattern hold what the probes see, and a replacement there is what the
// rest of the forward uses, as a probe's is.
TEST(HookPoints, ScoresAndPatternPointsAreTheProbesMapsInEveryFamily) {
  for (CrossAttention c : families()) {
    EXPECT_TRUE(xt::allclose(read_point(c, "hook_attn_scores"), read_stage(c, nn::AttentionStage::kScores), 0.0, 1e-14))
        << c.family;
    const Array A = read_point(c, "hook_pattern");
    EXPECT_TRUE(xt::allclose(A, read_stage(c, nn::AttentionStage::kWeights), 0.0, 1e-14)) << c.family;
    EXPECT_FALSE(c.probed->maps_observed()) << c.family << ": the points' hooks were removed";
    const auto uniform = [](const Tensor<double>& x) { return Tensor<double>(xt::ones_like(x.value()) / double(kSeqK)); };
    const auto id = c.point("hook_pattern").add_forward_hook(uniform);
    const Array through_point = c.output().value();
    c.point("hook_pattern").remove_hook(id);
    const auto probe_id = c.probed->register_attention_probe(
        [&](nn::AttentionStage s, const Tensor<double>& x, const Mask&) -> std::optional<Tensor<double>> {
          if (s != nn::AttentionStage::kWeights) return std::nullopt;
          return uniform(x);
        });
    const Array through_probe = c.output().value();
    c.probed->remove_attention_probe(probe_id);
    EXPECT_TRUE(xt::allclose(through_point, through_probe, 0.0, 0.0)) << c.family;
    EXPECT_FALSE(xt::allclose(through_point, c.output().value(), 0.0, 1e-6)) << c.family << ": the replacement was used";
  }
}

// hook_k_input holds the key input batch first, and replacing it is calling the module with other
// keys and the same values: the three inputs are separate points even when one tensor feeds them.
TEST(HookPoints, ReplacingTheKeyInputIsCallingWithOtherKeysInEveryFamily) {
  for (CrossAttention c : families()) {
    const Tensor<double> keys = random_input({kBatch, kSeqK, kDModel}, 9);  // batch first
    const Tensor<double> in_layout = c.sequence_first ? permute(keys, {1, 0, 2}) : keys;
    const auto id = c.point("hook_k_input").add_forward_hook([&](const Tensor<double>& x) {
      EXPECT_EQ(x.shape(), keys.shape()) << c.family;
      return keys;
    });
    const Array hooked = c.output().value();
    c.point("hook_k_input").remove_hook(id);
    EXPECT_TRUE(xt::allclose(hooked, c.with_keys(in_layout).value(), 0.0, 1e-14)) << c.family;
    EXPECT_FALSE(xt::allclose(hooked, c.output().value(), 0.0, 1e-6)) << c.family << ": the keys mattered";
  }
}

TEST(HookPoints, ZIsTheAttentionWeightsTimesTheValuesInEveryFamily) {
  for (CrossAttention c : families()) {
    const Array z = read_point(c, "hook_z"), v = read_point(c, "hook_v");
    const Array A = read_stage(c, nn::AttentionStage::kWeights);
    ASSERT_EQ(z.shape(), (Shape{kBatch, kHeads, kSeqQ, kDk})) << c.family;
    ASSERT_EQ(v.shape(), (Shape{kBatch, kHeads, kSeqK, kDk})) << c.family;
    for (std::size_t b = 0; b < kBatch; ++b)
      for (std::size_t h = 0; h < kHeads; ++h)
        for (std::size_t i = 0; i < kSeqQ; ++i)
          for (std::size_t d = 0; d < kDk; ++d) {
            double expected = 0;
            for (std::size_t j = 0; j < kSeqK; ++j) expected += A(b, h, i, j) * v(b, h, j, d);
            EXPECT_NEAR(z(b, h, i, d), expected, 1e-14) << c.family;
          }
  }
}

// The transformer family's projections: head h of Q is q times W_q[h], as the module documents.
TEST(HookPoints, TransformerQueryKeyValueAreEachHeadsProjection) {
  Generator gen(71);
  tf::MultiHeadAttention<double> m(kDModel, kHeads, gen);
  const Tensor<double> q = random_input({kBatch, kSeqQ, kDModel}, 1), kv = random_input({kBatch, kSeqK, kDModel}, 2);
  std::map<std::string, Array> seen;
  for (const std::string name : {"hook_q", "hook_k", "hook_v"}) {
    m.hook_point(name).add_forward_hook([&seen, name](const Tensor<double>& x) {
      seen[name] = x.value();
      return std::nullopt;
    });
  }
  m(q, kv, kv);
  const std::vector<std::pair<std::string, std::pair<const Tensor<double>*, const Tensor<double>*>>> expected = {
      {"hook_q", {&q, &m.W_q()}}, {"hook_k", {&kv, &m.W_k()}}, {"hook_v", {&kv, &m.W_v()}}};
  for (const auto& [name, input_and_weight] : expected) {
    const Array& x = input_and_weight.first->value();
    const Array& W = input_and_weight.second->value();  // [h, d_model, d_k]
    ASSERT_EQ(seen[name].shape(), (Shape{kBatch, kHeads, x.shape()[1], kDk})) << name;
    for (std::size_t b = 0; b < kBatch; ++b)
      for (std::size_t h = 0; h < kHeads; ++h)
        for (std::size_t s = 0; s < x.shape()[1]; ++s)
          for (std::size_t d = 0; d < kDk; ++d) {
            double dot = 0;
            for (std::size_t i = 0; i < kDModel; ++i) dot += x(b, s, i) * W(h, i, d);
            EXPECT_NEAR(seen[name](b, h, s, d), dot, 1e-14) << name;
          }
  }
}

TEST(HookPoints, ResultsAreEachHeadsShareOfTheOutputAndSumToItInEveryFamily) {
  for (CrossAttention c : families()) {
    const Array plain = c.batch_first_output();
    const Array z = read_point(c, "hook_z"), result = read_point(c, "hook_result");
    ASSERT_EQ(result.shape(), (Shape{kBatch, kHeads, kSeqQ, kDModel})) << c.family;
    const Array& W = c.projection->weight().value();  // [d_model, h*d_k]: head h's columns h*d_k...
    for (std::size_t b = 0; b < kBatch; ++b)
      for (std::size_t h = 0; h < kHeads; ++h)
        for (std::size_t i = 0; i < kSeqQ; ++i)
          for (std::size_t m = 0; m < kDModel; ++m) {
            double expected = 0;
            for (std::size_t d = 0; d < kDk; ++d) expected += z(b, h, i, d) * W(m, h * kDk + d);
            EXPECT_NEAR(result(b, h, i, m), expected, 1e-14) << c.family;
          }
    const Array summed = xt::sum(result, {1}) + c.projection->bias().value();
    EXPECT_TRUE(xt::allclose(summed, plain, 0.0, 1e-14)) << c.family;
  }
}

// The gradient every parameter gets from the loss.
std::vector<Array> parameter_gradients(CrossAttention& c) {
  c.module->zero_grad();
  GradientTape tape;
  tape.backward(sum(c.output() * c.weights));
  std::vector<Array> out;
  for (const Tensor<double>& p : c.module->parameters()) out.push_back(p.grad());
  return out;
}

// A hook that keeps its tensor changes nothing: the same bits for q, k, v and z (a change of
// layout and back, or none), the output to rounding for result (a sum over heads instead of one
// product).
TEST(HookPoints, HooksThatKeepTheirTensorChangeNoBitInEveryFamily) {
  for (CrossAttention c : families()) {
    const Array plain = c.output().value();
    const std::vector<Array> plain_grads = parameter_gradients(c);
    for (const std::string& name : kPoints) {
      nn::HookPoint<double>& p = c.point(name);
      const auto forward_id = p.add_forward_hook([](const Tensor<double>&) { return std::nullopt; });
      const auto gradient_id = p.add_gradient_hook([](const Array&) { return std::nullopt; });
      const Array hooked = c.output().value();
      const std::vector<Array> grads = parameter_gradients(c);
      ASSERT_EQ(grads.size(), plain_grads.size());
      // nn::transformer computes S and A unfused while they are hooked (nn/attention_probe.h).
      const bool unfused = c.family == "nn::transformer" && (name == "hook_attn_scores" || name == "hook_pattern");
      const double tolerance = name == "hook_result" || unfused ? 1e-14 : 0.0;
      EXPECT_TRUE(xt::allclose(hooked, plain, 0.0, tolerance)) << c.family << " " << name;
      for (std::size_t i = 0; i < grads.size(); ++i)
        EXPECT_TRUE(xt::allclose(grads[i], plain_grads[i], 0.0, tolerance)) << c.family << " " << name << " " << i;
      p.remove_hook(forward_id);
      p.remove_hook(gradient_id);
    }
  }
}

TEST(HookPoints, AZeroedHeadResultTakesExactlyThatResultOffTheOutputInEveryFamily) {
  for (CrossAttention c : families()) {
    const Array plain = c.batch_first_output(), result = read_point(c, "hook_result");
    const auto id = c.point("hook_result").add_forward_hook([](const Tensor<double>& x) {
      Array edited = x.value();
      xt::view(edited, xt::all(), 1) = 0.0;  // head 1 contributes nothing
      return Tensor<double>(edited);
    });
    const Array ablated = c.batch_first_output();
    c.point("hook_result").remove_hook(id);
    EXPECT_TRUE(xt::allclose(ablated, plain - xt::view(result, xt::all(), 1), 0.0, 1e-14)) << c.family;
  }
}

// dL/d(point) by central differences: the loss with h added to one element of the point's tensor.
Array central_differences(const std::function<double()>& loss, nn::HookPoint<double>& p, const Shape& shape) {
  Array out = Array::from_shape(shape);
  for (std::size_t i = 0; i < out.size(); ++i) {
    double delta = 0;
    const auto id = p.add_forward_hook([&](const Tensor<double>& x) {
      Array moved = x.value();
      moved.data()[i] += delta;
      return Tensor<double>(moved);
    });
    constexpr double h = 1e-6;
    delta = h;
    const double plus = loss();
    delta = -h;
    const double minus = loss();
    p.remove_hook(id);
    out.data()[i] = (plus - minus) / (2 * h);
  }
  return out;
}

// What p's gradient hook sees in a backward of loss() against central differences of loss() at p;
// it must not be zero (a point the loss does not depend on would agree trivially).
::testing::AssertionResult gradient_hook_sees_the_loss_gradient(nn::HookPoint<double>& p,
                                                                const std::function<Tensor<double>()>& loss,
                                                                double rtol) {
  std::optional<Array> ran;  // a default Array is 0-d, one element: it cannot say "not run"
  const auto id = p.add_gradient_hook([&](const Array& g) {
    ran = g;
    return std::nullopt;
  });
  {
    GradientTape tape;
    tape.backward(loss());
  }
  p.remove_hook(id);
  if (!ran) return ::testing::AssertionFailure() << "the gradient hook did not run";
  const Array& seen = *ran;
  const double largest = xt::amax(xt::abs(seen))();
  if (largest < 1e-3) return ::testing::AssertionFailure() << "the loss does not depend on the point";
  const Array expected =
      central_differences([&] { return loss().item(); }, p, Shape(seen.shape().begin(), seen.shape().end()));
  if (xt::allclose(seen, expected, rtol, 1e-8)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "largest difference " << xt::amax(xt::abs(seen - expected))();
}

// The gradient hook of every point sees dL/d(point), the gradient through the unhooked graph, so a
// point cannot silently miss or double a path.
TEST(HookPoints, EachGradientHookSeesTheGradientOfTheLossAtItsPointInEveryFamily) {
  for (CrossAttention c : families()) {
    for (const std::string& name : kPoints) {
      EXPECT_TRUE(gradient_hook_sees_the_loss_gradient(
          c.point(name), [&] { return sum(c.output() * c.weights); }, 1e-7))
          << c.family << " " << name;
    }
  }
}

TEST(HookPoints, AReplacedGradientIsWhatFlowsUpstream) {
  Generator gen(71);
  tf::MultiHeadAttention<double> m(kDModel, kHeads, gen);
  const Tensor<double> x = random_input({kBatch, kSeqQ, kDModel}, 1);
  m.hook_point("hook_q").add_gradient_hook([](const Array& g) { return Array(xt::zeros_like(g)); });
  GradientTape tape;
  tape.backward(sum(m(x, x, x) * random_input({kBatch, kSeqQ, kDModel}, 3)));
  EXPECT_EQ(m.W_q().grad(), Array(xt::zeros<double>(m.W_q().shape())));
  EXPECT_GT(xt::amax(xt::abs(m.W_k().grad()))(), 0.0);
}

TEST(HookPoints, AMisshapedReplacementNamesThePointAndBothShapes) {
  CrossAttention c = transformer_family();
  c.point("hook_z").add_forward_hook([](const Tensor<double>&) { return Tensor<double>::zeros({1}); });
  EXPECT_TRUE(throws_with<ShapeError>([&] { c.output(); },
                                      {"MultiHeadAttention.hook_z: forward hook 1 returned a replacement of shape [1]",
                                       "tensor of shape [2,2,3,2]"}));
}

TEST(HookPoints, PathsReachEveryAttentionModuleOfATransformer) {
  Generator gen(5);
  tf::Transformer<double> model(5, 5, 10, 0, 4, 2, 8, 2, 0.0, 1e-5, gen);
  std::vector<std::string> paths;
  for (const auto& [path, point] : model.named_hook_points()) paths.push_back(path);
  const auto count = [&](const std::string& suffix) {
    return std::count_if(paths.begin(), paths.end(), [&](const std::string& p) { return p.ends_with(suffix); });
  };
  // 2 encoder layers with self-attention, 2 decoder layers with self- and cross-attention: 6 modules.
  for (const std::string& name : kPoints) EXPECT_EQ(count("attention." + name), 6) << name;
  EXPECT_EQ(count(".hook_resid_pre"), 4);
  EXPECT_EQ(count(".hook_resid_after_ffn"), 4);
  EXPECT_EQ(count(".hook_resid_after_src_tgt_attention"), 2);
  EXPECT_EQ(count(".hook_ffn_out"), 4);
  EXPECT_EQ(count(".hook_self_attention_out"), 4);
  EXPECT_EQ(count(".hook_src_tgt_attention_out"), 2);
  EXPECT_EQ(count(".hook_scale"), 2 * 2 + 2 * 3);  // a LayerNorm per sublayer
  const std::string cross = "decoder.decoder_layers.1.src_tgt_attention";
  EXPECT_NE(std::find(paths.begin(), paths.end(), cross + ".hook_result"), paths.end());
  EXPECT_EQ(&model.hook_point(cross + ".hook_z"),
            &dynamic_cast<tf::MultiHeadAttention<double>&>(model.get_submodule(cross)).hook_point("hook_z"));
}

// A small Transformer and a loss weighting each of its output elements differently.
struct SmallTransformer {
  Generator gen{9};
  tf::Transformer<double> model{6, 6, 10, 0, 4, 1, 8, 2, 0.0, 1e-5, gen};
  IndexArray src = IndexArray({{1, 2, 3, 4}, {5, 4, 3, 2}}), tgt = IndexArray({{1, 5, 2}, {1, 3, 3}});
  Tensor<double> weights = random_input({2, 3, 4}, 11);

  Tensor<double> output() { return model(src, tgt); }
};

// What a point holds, read by a forward hook during a call of `run`.
template <class Run>
Array read_point_of(nn::Module<double>& model, const std::string& path, Run&& run) {
  Array seen;
  nn::HookPoint<double>& p = model.hook_point(path);
  const auto id = p.add_forward_hook([&](const Tensor<double>& x) {
    seen = x.value();
    return std::nullopt;
  });
  run();
  p.remove_hook(id);
  return seen;
}

// What a module returned, read by a forward hook during a call of `run`.
template <class Run>
Array read_output_of(nn::Module<double>& model, const std::string& path, Run&& run) {
  Array seen;
  nn::Module<double>& m = model.get_submodule(path);
  const auto id = m.register_forward_hook([&](std::span<const Tensor<double>>, const Tensor<double>& out) {
    seen = out.value();
    return std::nullopt;
  });
  run();
  m.remove_hook(id);
  return seen;
}

// Post-LN: the stream after a sublayer is its layer norm's output; the last is the layer's output;
// the stream before the layer is the previous layer's (here the embedding's) output.
TEST(HookPoints, ResidualStreamPointsHoldTheStreamBetweenSublayers) {
  SmallTransformer t;
  const auto run = [&] { t.output(); };
  const std::string layer = "decoder.decoder_layers.0";
  EXPECT_EQ(read_point_of(t.model, layer + ".hook_resid_after_self_attention", run),
            read_output_of(t.model, layer + ".layer_norm_self_attention", run));
  EXPECT_EQ(read_point_of(t.model, layer + ".hook_resid_after_src_tgt_attention", run),
            read_output_of(t.model, layer + ".layer_norm_src_tgt_attention", run));
  EXPECT_EQ(read_point_of(t.model, layer + ".hook_resid_after_ffn", run), read_output_of(t.model, layer, run));
  EXPECT_EQ(read_point_of(t.model, "encoder.encoder_layers.0.hook_resid_pre", run),
            read_output_of(t.model, "encoder.positional_encoding", run));
}

// A sublayer's out point holds what the sublayer module returned; the stream after it is
// norm(before + out) in post-LN (dropout is off), so zeroing the out point leaves norm(before).
TEST(HookPoints, SublayerOutPointsHoldWhatEachSublayerAddsToTheStream) {
  SmallTransformer t;
  const auto run = [&] { t.output(); };
  const std::string layer = "decoder.decoder_layers.0";
  EXPECT_EQ(read_point_of(t.model, layer + ".hook_self_attention_out", run),
            read_output_of(t.model, layer + ".self_attention", run));
  EXPECT_EQ(read_point_of(t.model, layer + ".hook_src_tgt_attention_out", run),
            read_output_of(t.model, layer + ".src_tgt_attention", run));
  EXPECT_EQ(read_point_of(t.model, layer + ".hook_ffn_out", run), read_output_of(t.model, layer + ".ffn", run));
  const Array before = read_point_of(t.model, layer + ".hook_resid_after_self_attention", run);
  nn::HookPoint<double>& out = t.model.hook_point(layer + ".hook_src_tgt_attention_out");
  const auto id = out.add_forward_hook([](const Tensor<double>& x) { return Tensor<double>::zeros(x.shape()); });
  const Array after = read_point_of(t.model, layer + ".hook_resid_after_src_tgt_attention", run);
  out.remove_hook(id);
  nn::LayerNorm<double>& norm = dynamic_cast<nn::LayerNorm<double>&>(t.model.get_submodule(layer + ".layer_norm_src_tgt_attention"));
  EXPECT_TRUE(xt::allclose(after, norm(Tensor<double>(before)).value(), 0.0, 1e-14));
}

TEST(HookPoints, LayerNormScaleIsOneOverTheGroupsStandardDeviation) {
  Generator gen(4);
  nn::LayerNorm<double> norm(Shape{3, 4}, 1e-5);
  const Tensor<double> x = random_input({2, 3, 4}, 12);
  const Array plain = norm(x).value();
  const Array scale = read_point_of(norm, "hook_scale", [&] { norm(x); });
  ASSERT_EQ(scale.shape(), (Shape{2, 1, 1}));
  for (std::size_t b = 0; b < 2; ++b) {
    const double* group = x.value().data() + b * 12;
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < 12; ++i) mean += group[i] / 12;
    for (std::size_t i = 0; i < 12; ++i) var += (group[i] - mean) * (group[i] - mean) / 12;
    EXPECT_NEAR(scale(b, 0, 0), 1.0 / std::sqrt(var + 1e-5), 1e-13);
  }
  nn::HookPoint<double>& p = norm.hook_point("hook_scale");
  const auto keep = p.add_forward_hook([](const Tensor<double>&) { return std::nullopt; });
  EXPECT_TRUE(xt::allclose(norm(x).value(), plain, 0.0, 1e-14));  // the unfused path, to rounding
  p.remove_hook(keep);
  // With weight 1 and bias 0 the output is (x - mean) * scale: a doubled scale doubles it.
  const auto doubled = p.add_forward_hook([](const Tensor<double>& s) { return s * 2.0; });
  EXPECT_TRUE(xt::allclose(norm(x).value(), 2.0 * plain, 0.0, 1e-14));
  p.remove_hook(doubled);
  // A bad input is refused in layer_norm's words, hooked or not.
  EXPECT_TRUE(throws_with<ShapeError>([&] { norm(random_input({2, 4, 3}, 1)); }, {"layer_norm", "[2,4,3]"}));
}

// The gradient hooks of the residual stream and of LayerNorm's scale see dL/d(point) too.
TEST(HookPoints, ResidualAndScaleGradientHooksSeeTheGradientOfTheLoss) {
  for (const std::string path : {"encoder.encoder_layers.0.hook_resid_pre",
                                 "encoder.encoder_layers.0.hook_resid_after_self_attention",
                                 "encoder.encoder_layers.0.hook_ffn_out",
                                 "decoder.decoder_layers.0.hook_src_tgt_attention_out",
                                 "decoder.decoder_layers.0.hook_resid_after_src_tgt_attention",
                                 "decoder.decoder_layers.0.layer_norm_ffn.hook_scale"}) {
    SmallTransformer t;
    EXPECT_TRUE(gradient_hook_sees_the_loss_gradient(
        t.model.hook_point(path), [&] { return sum(t.output() * t.weights); }, 1e-6))
        << path;
  }
}

TEST(HookPoints, NamedModulesListEachModuleOnceDepthFirst) {
  Generator gen(5);
  tf::Transformer<double> model(5, 5, 10, 0, 4, 1, 8, 2, 0.0, 1e-5, gen);
  const auto modules = model.named_modules();
  ASSERT_FALSE(modules.empty());
  EXPECT_EQ(modules.front().first, "");
  EXPECT_EQ(modules.front().second, &model);
  for (const auto& [path, m] : modules) EXPECT_EQ(&model.get_submodule(path), m) << path;
  std::vector<const nn::Module<double>*> seen;
  for (const auto& [path, m] : modules) {
    EXPECT_EQ(std::find(seen.begin(), seen.end(), m), seen.end()) << path << " listed twice";
    seen.push_back(m);
  }
}

TEST(HookPoints, BadPathsNameTheStepAndWhatIsThere) {
  Generator gen(5);
  tf::Transformer<double> model(5, 5, 10, 0, 4, 1, 8, 2, 0.0, 1e-5, gen);
  EXPECT_TRUE(throws_with<ValueError>([&] { model.get_submodule("encoder.layers.0"); },
                                      {"get_submodule('encoder.layers.0')", "'encoder'", "has no child 'layers'",
                                       "encoder_layers"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { model.hook_point("encoder.encoder_layers.0.multi_head_attention.hook_mlp_out"); },
      {"has no hook point 'hook_mlp_out'", "hook_q_input, hook_k_input, hook_v_input, hook_q, hook_k, hook_v, "
                                           "hook_attn_scores, hook_pattern, hook_z, hook_result"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { model.hook_point("encoder.hook_q"); },
                                      {"hook_point('encoder.hook_q')", "has no hook point 'hook_q'", "none"}));
}

// A module of one's own registering points: the names must say they are points and be free.
struct TwoPoints : nn::Module<double> {
  nn::HookPoint<double> a, b;
  std::string type_name() const override { return "TwoPoints"; }
  void add(const std::string& name, nn::HookPoint<double>& p) { this->register_hook_point(name, p); }
};

TEST(HookPoints, RegistrationRefusesNamesThatAreNotPointsOrAreTaken) {
  TwoPoints m;
  EXPECT_TRUE(throws_with<ValueError>([&] { m.add("a", m.a); }, {"TwoPoints", "'a'", "must start with 'hook_'"}));
  m.add("hook_a", m.a);
  EXPECT_TRUE(throws_with<ValueError>([&] { m.add("hook_a", m.b); }, {"TwoPoints", "'hook_a'", "registered twice"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { m.a.add_forward_hook(nullptr); }, {"TwoPoints.hook_a", "empty hook"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { m.a.remove_hook(12345678); }, {"TwoPoints.hook_a", "no hook with id"}));
}

}  // namespace
}  // namespace tapegrad
