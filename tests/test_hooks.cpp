// Gradient hooks (Tensor::register_hook): what they see, what a replacement changes, and the
// attention-map intervention the attention-study work builds on.
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "autograd/core/custom_op.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "nn/containers.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/mha/multi_head_attention.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

Tensor<double> vec(std::initializer_list<double> v) { return Tensor<double>(xt::xarray<double>(v), true); }

TEST(GradHook, IntermediateHookSeesTheGradientOfTheLossWithRespectToIt) {
  auto x = vec({1.0, 2.0, 3.0});
  GradientTape tape;
  auto y = x * x;
  std::vector<xt::xarray<double>> seen;
  y.register_hook([&](const xt::xarray<double>& g) -> std::optional<xt::xarray<double>> {
    seen.push_back(g);
    return std::nullopt;
  });
  tape.backward(sum(y * 3.0));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], xt::xarray<double>({3.0, 3.0, 3.0}));
  EXPECT_EQ(x.grad(), xt::xarray<double>({6.0, 12.0, 18.0}));  // unchanged: 3 * 2x
}

TEST(GradHook, AReplacementFlowsOnToTheInputsAndIsWhatRetainGradKeeps) {
  auto x = vec({1.0, 2.0, 3.0});
  GradientTape tape;
  auto y = x * x;
  y.retain_grad();
  y.register_hook([](const xt::xarray<double>& g) { return std::optional<xt::xarray<double>>(g * 0.0 + 1.0); });
  tape.backward(sum(y * 3.0));
  EXPECT_EQ(y.grad(), xt::xarray<double>({1.0, 1.0, 1.0}));
  EXPECT_EQ(x.grad(), xt::xarray<double>({2.0, 4.0, 6.0}));  // 1 * 2x
}

TEST(GradHook, LeafHookRunsOnceOnTheWalksTotalBeforeItIsAccumulated) {
  auto x = vec({1.0, 2.0});
  int calls = 0;
  x.register_hook([&](const xt::xarray<double>& g) {
    ++calls;
    EXPECT_EQ(g, xt::xarray<double>({5.0, 5.0}));  // both uses: 2 + 3
    return std::optional<xt::xarray<double>>(g * 10.0);
  });
  for (int step = 1; step <= 2; ++step) {
    GradientTape tape;
    tape.backward(sum(x * 2.0) + sum(x * 3.0));
    EXPECT_EQ(calls, step);
    EXPECT_EQ(x.grad(), xt::xarray<double>({50.0 * step, 50.0 * step}));  // leaves still accumulate
  }
}

TEST(GradHook, HooksRunInRegistrationOrderAndCanBeRemoved) {
  auto x = vec({1.0});
  std::vector<double> order;
  const auto add = x.register_hook([&](const xt::xarray<double>& g) {
    order.push_back(g(0));
    return std::optional<xt::xarray<double>>(g + 1.0);
  });
  x.register_hook([&](const xt::xarray<double>& g) -> std::optional<xt::xarray<double>> {
    order.push_back(g(0));
    return std::nullopt;
  });
  {
    GradientTape tape;
    tape.backward(sum(x * 4.0));
  }
  EXPECT_EQ(order, (std::vector<double>{4.0, 5.0}));
  EXPECT_DOUBLE_EQ(x.grad()(0), 5.0);
  x.remove_hook(add);
  x.zero_grad();
  order.clear();
  {
    GradientTape tape;
    tape.backward(sum(x * 4.0));
  }
  EXPECT_EQ(order, (std::vector<double>{4.0}));
  EXPECT_DOUBLE_EQ(x.grad()(0), 4.0);
  EXPECT_TRUE(throws_with<ValueError>([&] { x.remove_hook(add); }, {"remove_hook", "no hook with id"}));
}

TEST(GradHook, MisShapedReplacementAndHooksOnConstantsAreErrors) {
  auto x = vec({1.0, 2.0});
  GradientTape tape;
  auto y = exp(x);
  y.register_hook([](const xt::xarray<double>&) { return std::optional<xt::xarray<double>>(xt::xarray<double>{1.0}); });
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(sum(y)); }, {"gradient hook 1", "[2]", "shape [1]"}));
  auto constant = Tensor<double>::ones({2});
  EXPECT_TRUE(throws_with<TapeError>(
      [&] { constant.register_hook([](const xt::xarray<double>&) { return std::optional<xt::xarray<double>>(); }); },
      {"register_hook", "does not require a gradient"}));
}

// Zeroing dL/dA through a hook on the attention map cuts every path from the loss to the query
// and key projections (the scores reach the loss only through A), and leaves the value and output
// projections' gradients exactly as they were.
TEST(GradHook, ReplacingTheGradientThroughAnAttentionMapChangesTheParameterGradientsAccordingly) {
  Generator gen(3);
  nn::mha::MultiHeadAttention<double> mha(8, 2, gen, /*dropout=*/0.0);
  const auto x = Tensor<double>::randn({2, 4, 8}, gen);
  const auto gradients = [&](bool cut_attention) {
    mha.zero_grad();
    GradientTape tape;
    const auto out = mha(x, x, x);
    if (cut_attention) {
      Tensor<double> weights = out.attention_weights;
      weights.register_hook([](const xt::xarray<double>& g) { return std::optional<xt::xarray<double>>(g * 0.0); });
    }
    tape.backward(sum(out.output * out.output));
    std::vector<xt::xarray<double>> grads;
    for (const auto& p : mha.parameters()) grads.push_back(p.grad());
    return grads;
  };
  const auto plain = gradients(false), cut = gradients(true);
  const auto names = mha.named_parameters();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i].first;
    if (name.rfind("query.", 0) == 0 || name.rfind("key.", 0) == 0) {
      // There was a gradient to cut (key.bias has none: softmax ignores a per-row shift).
      if (name != "key.bias") {
        EXPECT_GT(xt::amax(xt::abs(plain[i]))(), 1e-6) << name;
      }
      EXPECT_EQ(max_abs_diff(cut[i], xt::zeros_like(cut[i])), 0.0) << name;
    } else {
      EXPECT_EQ(max_abs_diff(cut[i], plain[i]), 0.0) << name;
    }
  }
}

TEST(GradHook, AHookThatThrowsLeavesGradientsAsTheyWereAndTheTapeSpent) {
  auto x = vec({1.0, 2.0});
  auto w = vec({3.0, 4.0});
  {
    GradientTape first;
    first.backward(sum(x * w));  // x.grad() = w, w.grad() = x
  }
  w.register_hook([](const xt::xarray<double>&) -> std::optional<xt::xarray<double>> {
    throw ValueError("user hook: refused");
  });
  GradientTape tape(/*persistent=*/true);
  const auto loss = sum(x * w);
  EXPECT_TRUE(throws_with<ValueError>([&] { tape.backward(loss); }, {"user hook: refused"}));
  EXPECT_EQ(w.grad(), xt::xarray<double>({1.0, 2.0}));  // the failed walk's contribution was dropped
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(loss); }, {"earlier backward on this tape threw"}));
}

TEST(GradHook, OpsInsideAHookAreNotRecorded) {
  auto x = vec({2.0});
  bool recorded = true;
  x.register_hook([&](const xt::xarray<double>& g) {
    const Tensor<double> inside = x * 5.0;  // a hook runs inside the walk: recording is paused
    recorded = inside.requires_grad();
    return std::optional<xt::xarray<double>>(g);
  });
  GradientTape tape;
  tape.backward(sum(x * x));
  EXPECT_FALSE(recorded);
  EXPECT_DOUBLE_EQ(x.grad()(0), 4.0);
}

// A leaf's hook runs as soon as its gradient is final, in the middle of the walk (a data-parallel
// reducer starts sending it then): right after the oldest op reading it, before older ops' backward.
TEST(GradHook, LeafHookRunsOnceTheWalkHasPassedTheOldestOpReadingIt) {
  auto w = vec({1.0, 2.0});  // read by the oldest op only
  auto x = vec({3.0, 4.0});  // read by the newest op and by the middle one
  std::vector<std::string> events;
  const auto probe = [&](const Tensor<double>& input) {
    return custom_op("probe", xt::xarray<double>(input.value()),
                     [&events, input](const xt::xarray<double>& g, const xt::xarray<double>& /*result*/) {
                       events.push_back("probe backward");
                       add_gradient(input, xt::xarray<double>(g));
                     },
                     input);
  };
  w.register_hook([&](const xt::xarray<double>& g) {
    events.push_back("w hook");
    EXPECT_EQ(g, xt::xarray<double>({3.0, 4.0}));
    return std::optional<xt::xarray<double>>();
  });
  x.register_hook([&](const xt::xarray<double>& g) {
    events.push_back("x hook");
    EXPECT_EQ(g, xt::xarray<double>({2.0, 3.0}));  // both of its readers: 1 + w
    return std::optional<xt::xarray<double>>();
  });
  GradientTape tape;
  const auto h = probe(w);        // oldest: reads w
  const auto hx = h * x;          // reads x
  const auto y = probe(hx) + x;   // newest: reads x
  tape.backward(sum(y));
  EXPECT_EQ(events, (std::vector<std::string>{"probe backward", "x hook", "probe backward", "w hook"}));
  EXPECT_EQ(x.grad(), xt::xarray<double>({2.0, 3.0}));
  EXPECT_EQ(w.grad(), xt::xarray<double>({3.0, 4.0}));
}

// A custom op that adds into a tensor it did not pass to custom_op would reach a leaf whose hooks
// have already run: named as an error, not a second, silent run of the hooks.
TEST(GradHook, AGradientReachingAFinishedLeafIsAnError) {
  auto x = vec({1.0});
  auto u = vec({2.0});
  x.register_hook([](const xt::xarray<double>& g) { return std::optional<xt::xarray<double>>(g); });
  GradientTape tape;
  const auto hidden = custom_op("adds_into_x_unlisted", xt::xarray<double>(u.value()),
                                [x](const xt::xarray<double>& g, const xt::xarray<double>& /*result*/) {
                                  add_gradient(x, xt::xarray<double>(g));
                                }, u);
  const auto y = hidden * x;
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(sum(y)); },
                                     {"reached leaf [1] (a leaf)", "does not list the leaf among its inputs"}));
}

TEST(GradHook, AHookCannotWalkOrClearTheTapeWhoseWalkCallsIt) {
  auto x = vec({1.0});
  for (const bool clear : {false, true}) {
    GradientTape tape(/*persistent=*/true);
    const auto loss = sum(x * 2.0);
    const auto id = x.register_hook([&](const xt::xarray<double>&) -> std::optional<xt::xarray<double>> {
      if (clear) tape.clear();
      else tape.backward(loss);
      return std::nullopt;
    });
    EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(loss); },
                                       {clear ? "GradientTape::clear: called while" : "backward: called while"}))
        << clear;
    x.remove_hook(id);
  }
}

// ---- module hooks ----------------------------------------------------------------------------

TEST(ModuleHook, ForwardHookSeesInputAndOutputAndMayReplaceTheOutput) {
  Generator gen(1);
  auto first = std::make_shared<nn::Linear<double>>(3, 4, gen);
  auto second = std::make_shared<nn::Linear<double>>(4, 2, gen);
  nn::Sequential<double> model;
  model.push_back(first);
  model.push_back(second);
  const auto x = Tensor<double>::randn({5, 3}, gen);
  Shape seen_input, seen_output;
  const auto id = first->register_forward_hook([&](const Tensor<double>& in, const Tensor<double>& out) {
    seen_input = in.shape();
    seen_output = out.shape();
    return std::optional<Tensor<double>>(out * 0.0);
  });
  const auto y = model(x);
  EXPECT_EQ(seen_input, (Shape{5, 3}));
  EXPECT_EQ(seen_output, (Shape{5, 4}));
  // The second layer saw zeros: every row of y is its bias.
  for (std::size_t r = 0; r < 5; ++r) EXPECT_EQ(xt::xarray<double>(xt::row(y.value(), r)), second->bias().value());
  first->remove_hook(id);
  EXPECT_GT(max_abs_diff(model(x).value(), y.value()), 0.0);
  EXPECT_TRUE(throws_with<ValueError>([&] { first->remove_hook(id); }, {"Linear", "remove_hook", "no hook with id"}));
}

TEST(ModuleHook, OutputGradHookSeesDLossDOutputAndAReplacementReachesTheParameters) {
  Generator gen(2);
  nn::Linear<double> layer(3, 2, gen);
  const auto x = Tensor<double>::randn({4, 3}, gen);
  std::vector<xt::xarray<double>> seen;
  layer.register_output_grad_hook([&](const xt::xarray<double>& g) {
    seen.push_back(g);
    return std::optional<xt::xarray<double>>(g * 0.0 + 1.0);
  });
  GradientTape tape;
  tape.backward(sum(layer(x) * 3.0));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], xt::xarray<double>(xt::full_like(seen[0], 3.0)));
  // With dL/dy replaced by ones: dL/db = column sums of ones = 4; dL/dW = ones^T x, whose every
  // row is the column sums of x.
  EXPECT_EQ(layer.bias().grad(), xt::xarray<double>({4.0, 4.0}));
  const xt::xarray<double> column_sums = xt::sum(x.value(), {0});
  for (std::size_t r = 0; r < 2; ++r) {
    EXPECT_LT(max_abs_diff(xt::xarray<double>(xt::row(layer.weight().grad(), r)), column_sums), 1e-12);
  }
}

TEST(ModuleHook, AnIdentityModuleGetsAnOutputOfItsOwnToHook) {
  Generator gen(3);
  nn::Dropout<double> drop(gen, 0.5);
  drop.eval();  // identity: forward returns its input
  auto x = Tensor<double>::ones({2}, true);
  int calls = 0;
  drop.register_output_grad_hook([&](const xt::xarray<double>& g) {
    ++calls;
    return std::optional<xt::xarray<double>>(g * 2.0);
  });
  for (int step = 0; step < 2; ++step) {
    GradientTape tape;
    tape.backward(sum(drop(x)));
  }
  EXPECT_EQ(calls, 2);                           // once per backward: x itself got no hook
  EXPECT_EQ(x.grad(), xt::xarray<double>({4.0, 4.0}));  // 2 per step
}

}  // namespace
}  // namespace tapegrad
