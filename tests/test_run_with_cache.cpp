// study::run_with_cache (study/run_with_cache.h): the values and gradients it caches against what
// hooks of one's own read, the calls of a module run twice, what it leaves behind (no hook, no
// gradient without kYes), and bad input.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/core/tape.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/transformer/transformer.h"
#include "study/run_with_cache.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;
const std::string kZ = "encoder.encoder_layers.0.multi_head_attention.hook_z";
const std::string kScale = "decoder.decoder_layers.0.layer_norm_ffn.hook_scale";
const std::string kResid = "decoder.decoder_layers.0.hook_resid_pre";

struct CachedTransformer {
  Generator gen{19};
  nn::transformer::Transformer<double> model{6, 6, 10, 0, 4, 1, 8, 2, 0.0, 1e-5, gen};
  IndexArray src = IndexArray({{1, 2, 3, 4}, {5, 4, 3, 2}}), tgt = IndexArray({{1, 5, 2}, {1, 3, 3}});
  Tensor<double> weights;

  CachedTransformer() {
    Generator w(20);
    weights = Tensor<double>::uniform({2, 3, 4}, w);
  }
  Tensor<double> metric() { return sum(model(src, tgt) * weights); }
};

TEST(RunWithCache, CachesWhatHooksOfOnesOwnSeeForwardAndBackward) {
  CachedTransformer t;
  // The reference: hooks of our own on each point, and a backward of our own.
  std::map<std::string, Array> values, grads;
  std::vector<std::pair<nn::HookPoint<double>*, std::uint64_t>> ids;
  for (const std::string& path : {kZ, kScale, kResid}) {
    nn::HookPoint<double>& p = t.model.hook_point(path);
    ids.emplace_back(&p, p.add_forward_hook([&values, path](const Tensor<double>& x) {
      values[path] = x.value();
      return std::nullopt;
    }));
    ids.emplace_back(&p, p.add_gradient_hook([&grads, path](const Array& g) {
      grads[path] = g;
      return std::nullopt;
    }));
  }
  double expected_metric = 0;
  {
    GradientTape tape;
    const Tensor<double> m = t.metric();
    expected_metric = m.item();
    tape.backward(m);
  }
  for (auto& [p, id] : ids) p->remove_hook(id);

  const auto cache = study::run_with_cache<double>(t.model, [&] { return t.metric(); }, {kZ, kScale, kResid},
                                                   study::CacheGradients::kYes);
  EXPECT_EQ(cache.metric, expected_metric);
  for (const std::string& path : {kZ, kScale, kResid}) {
    EXPECT_EQ(cache.value(path), values.at(path)) << path;
    EXPECT_EQ(cache.grad(path), grads.at(path)) << path;
    EXPECT_GT(xt::amax(xt::abs(cache.grad(path)))(), 0.0) << path;
  }
  EXPECT_EQ(cache.values.size(), 3u);
  // A point named twice is cached once, as one call.
  const auto twice = study::run_with_cache<double>(t.model, [&] { return t.metric(); }, {kZ, kZ},
                                                   study::CacheGradients::kYes);
  EXPECT_EQ(twice.values.size(), 1u);
  EXPECT_EQ(twice.value(kZ), values.at(kZ));
  // Without hook_scale hooked the layer norm is the fused op again: the gradient equal to rounding.
  EXPECT_TRUE(xt::allclose(twice.grad(kZ), grads.at(kZ), 0.0, 1e-14));
}

TEST(RunWithCache, LeavesNoHookBehindAlsoWhenTheForwardThrows) {
  CachedTransformer t;
  study::run_with_cache<double>(t.model, [&] { return t.metric(); }, {kZ, kResid}, study::CacheGradients::kYes);
  for (const auto& [path, point] : t.model.named_hook_points()) EXPECT_FALSE(point->active()) << path;
  EXPECT_THROW(study::run_with_cache<double>(
                   t.model, [&]() -> Tensor<double> { throw ValueError("the forward failed"); }, {kZ}),
               ValueError);
  for (const auto& [path, point] : t.model.named_hook_points()) EXPECT_FALSE(point->active()) << path;
}

TEST(RunWithCache, WithoutGradientsNothingIsAddedToTheParameters) {
  CachedTransformer t;
  const auto cache = study::run_with_cache<double>(t.model, [&] { return t.metric(); }, {kZ});
  EXPECT_TRUE(cache.grads.empty());
  for (const auto& [name, p] : t.model.named_parameters()) EXPECT_FALSE(p.has_grad()) << name;
  EXPECT_TRUE(throws_with<ValueError>([&] { cache.grad(kZ); }, {"ActivationCache::grad", kZ, "cached: none"}));
}

TEST(RunWithCache, AModuleRunTwiceKeepsEachCall) {
  Generator gen(3);
  nn::labml::MultiHeadAttention<double> mha(2, 4, gen, /*dropout_prob=*/0.0);
  Generator data(4);
  const Tensor<double> x = Tensor<double>::uniform({3, 2, 4}, data), y = Tensor<double>::uniform({3, 2, 4}, data);
  const auto cache = study::run_with_cache<double>(
      mha, [&] { return sum(mha(x, x, x) * mha(y, y, y)); }, {"hook_z"}, study::CacheGradients::kYes);
  ASSERT_EQ(cache.values.size(), 2u);
  EXPECT_NE(cache.value("hook_z"), cache.value("hook_z#2"));
  // d(sum(a * b))/da = b: the first call's output gradient is the second call's output, and back
  // through the output projection dL/dz differs between the calls.
  EXPECT_NE(cache.grad("hook_z"), cache.grad("hook_z#2"));
  EXPECT_TRUE(throws_with<ValueError>([&] { cache.value("hook_q"); }, {"nothing cached at 'hook_q'", "hook_z, hook_z#2"}));
}

TEST(RunWithCache, BadInputIsRefusedBeforeOrAfterTheForwardNamingIt) {
  CachedTransformer t;
  bool ran = false;
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        study::run_with_cache<double>(t.model, [&] { ran = true; return t.metric(); },
                                      {kZ, "encoder.encoder_layers.0.multi_head_attention.hook_attn_out"});
      },
      {"has no hook point 'hook_attn_out'", "hook_q"}));
  EXPECT_FALSE(ran);  // an unknown point is found before anything runs
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { study::run_with_cache<double>(t.model, [&] { return t.model(t.src, t.tgt); }, {kZ}); },
      {"run_with_cache", "single-element metric", "[2,3,4]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        study::run_with_cache<double>(t.model, [&] { return Tensor<double>(xt::xarray<double>(1.0)); }, {kZ},
                                      study::CacheGradients::kYes);
      },
      {"run_with_cache", "requires no gradient"}));
}

}  // namespace
}  // namespace tapegrad
