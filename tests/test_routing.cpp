// The routing table at the head of autograd/core/routing.h, row by row: each test names the
// row (kind × event) it checks. Hooks here scale or clip gradients so that a hook that ran twice,
// ran on part of a total, or did not run at all shows in the numbers.
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "autograd/core/custom_op.h"
#include "autograd/ops/functional.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;
using Hooked = std::optional<Array>;

Tensor<double> leaf(std::initializer_list<double> v) { return Tensor<double>(Array(v), true); }

// ---- leaf, backward, no hooks ----------------------------------------------------------------

TEST(Routing, LeafWithoutHooksArrivesInGradAndAnotherArrivalAdds) {
  auto x = leaf({1.0, 2.0});
  GradientTape tape;
  tape.backward(sum(x * 2.0) + sum(x * x));  // two arrivals: 2 and 2x
  EXPECT_EQ(x.grad(), Array({4.0, 6.0}));
}

// ---- leaf, backward, hooked: one hook call per walk, on that walk's own total ------------------

TEST(Routing, HookedLeafHookRunsOnceOnTheWalksTotal) {
  auto x = leaf({1.0});
  std::vector<double> seen;
  x.register_hook([&](const Array& g) -> Hooked {
    seen.push_back(g(0));
    return Array{std::min(g(0), 1.0)};  // clips this walk's total
  });
  GradientTape tape;
  tape.backward(sum(x * 2.0) + sum(x * 3.0));
  EXPECT_EQ(seen, std::vector<double>{5.0});
  EXPECT_EQ(x.grad(), Array({1.0}));  // clipped total, not 2 clipped + 3 clipped
}

TEST(Routing, ThreadsWalkingIntoOneHookedLeafEachGetOneHookCallOnTheirOwnTotal) {
  auto shared = leaf({1.0});
  std::atomic<int> calls{0};
  std::atomic<int> wrong_totals{0};
  shared.register_hook([&](const Array& g) -> Hooked {
    ++calls;
    if (g(0) != 5.0) ++wrong_totals;  // every walk's total is 2 + 3
    return Array{1.0};                // each walk contributes exactly 1 after the clip
  });
  constexpr int kThreads = 4;
  constexpr int kWalksPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kWalksPerThread; ++i) {
        GradientTape tape;
        tape.backward(sum(shared * 2.0) + sum(shared * 3.0));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), kThreads * kWalksPerThread);
  EXPECT_EQ(wrong_totals.load(), 0);
  EXPECT_EQ(shared.grad(), Array({double(kThreads * kWalksPerThread)}));
}

TEST(Routing, HookedLeafTotalIsDroppedWhenTheWalkThrows) {
  auto x = leaf({1.0});
  int calls = 0;
  x.register_hook([&](const Array&) -> Hooked {
    ++calls;
    return std::nullopt;
  });
  const auto fails = [](const Tensor<double>& input) {
    return custom_op("fails", Array(input.value()),
                     [](const Array&, const Array&) { throw ValueError("fails: refused"); }, input);
  };
  GradientTape tape;
  const auto loss = sum(fails(x * 1.0)) + sum(x * 2.0);  // x's direct contribution arrives first
  EXPECT_TRUE(throws_with<ValueError>([&] { tape.backward(loss); }, {"fails: refused"}));
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(x.has_grad());
}

// ---- gradient() sources and other leaves -------------------------------------------------------

TEST(Routing, GradientSourceLeafIsReturnedAfterItsHooksAndGradIsUntouched) {
  auto x = leaf({1.0, 2.0});
  auto other = leaf({3.0, 4.0});
  x.set_grad(Array{100.0, 100.0});
  int calls = 0;
  x.register_hook([&](const Array& g) -> Hooked {
    ++calls;
    return g * 10.0;
  });
  GradientTape tape;
  const auto g = tape.gradient(sum(x * other) + sum(x), {x});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(g[0].value(), Array({40.0, 50.0}));  // (other + 1) * 10
  EXPECT_EQ(x.grad(), Array({100.0, 100.0}));
  EXPECT_FALSE(other.has_grad());  // not a source: dropped
}

TEST(Routing, OneSourcePassedTwiceGetsItsGradientTwice) {
  auto x = leaf({2.0});
  GradientTape tape;
  const auto g = tape.gradient(sum(x * x), {x, x});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].value(), Array({4.0}));
  EXPECT_EQ(g[1].value(), Array({4.0}));
}

// ---- intermediates -----------------------------------------------------------------------------

TEST(Routing, IntermediateNewerThanTheRunningEntryIsAnError) {
  auto x = leaf({1.0});
  GradientTape tape;
  Tensor<double> later;  // made after the op whose backward adds into it
  const auto sneaky = custom_op("adds_into_a_newer_tensor", Array(x.value()),
                                [&later](const Array& g, const Array&) { add_gradient(later, Array(g)); }, x);
  later = sneaky * 2.0;
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(sum(later) + sum(sneaky)); },
                                     {"backward of adds_into_a_newer_tensor", "whose op the walk has already passed",
                                      "does not list the tensor among its inputs"}));
}

TEST(Routing, RetainedIntermediateKeepsTheHookedGradientAndALentSeedIsNotWritten) {
  auto x = leaf({1.0, 2.0});
  GradientTape tape;
  auto y = x * 3.0;
  y.retain_grad();
  y.register_hook([](const Array& g) -> Hooked { return g + 1.0; });
  const Array seed{1.0, 1.0};
  tape.backward(y, seed);
  EXPECT_EQ(seed, Array({1.0, 1.0}));
  EXPECT_EQ(y.grad(), Array({2.0, 2.0}));
  EXPECT_EQ(x.grad(), Array({6.0, 6.0}));
}

TEST(Routing, IntermediateNotOnTheWalkingTapeIsAnError) {
  auto x = Tensor<double>(Array{1.0}, true);
  GradientTape outer;
  const auto a = x * 0.5;  // on the outer tape only
  GradientTape inner;
  const auto unlisted = custom_op("adds_into_an_outer_intermediate", Array(x.value()),
                                  [a](const Array& g, const Array&) { add_gradient(a, Array(g)); }, x);
  EXPECT_TRUE(throws_with<TapeError>([&] { inner.backward(sum(unlisted)); },
                                     {"backward of adds_into_an_outer_intermediate", "(output of mul_scalar)",
                                      "not on the walking tape"}));
}

TEST(Routing, RetainedIntermediateKeepsItsGradientInGradientToo) {
  auto x = leaf({1.0, 2.0});
  GradientTape tape;
  auto y = x * 3.0;
  y.retain_grad();
  const auto g = tape.gradient(sum(y * y), {x});
  EXPECT_EQ(y.grad(), Array({6.0, 12.0}));
  EXPECT_EQ(g[0].value(), Array({18.0, 36.0}));
  EXPECT_FALSE(x.has_grad());
}

TEST(Routing, AWalkThatThrowsDropsTheGradientsInFlightTheSeedAmongThem) {
  for (const bool lent : {true, false}) {
    auto x = leaf({1.0});
    auto u = leaf({2.0});
    GradientTape tape;
    const auto a = exp(u);
    const auto b = a * x;  // its backward checks x, written in place below, and throws
    const auto loss = sum(a) + sum(b);
    x.mutable_value()(0) = 5.0;
    Array seed = Array::from_shape(loss.value().shape());
    seed.fill(1.0);
    EXPECT_TRUE(throws_with<TapeError>([&] { lent ? tape.backward(loss, seed) : tape.backward(loss, Array(seed)); },
                                       {"modified in place"}));
    EXPECT_FALSE(a.has_grad()) << lent;  // reached by sum(a) before b's backward threw
    EXPECT_FALSE(b.has_grad()) << lent;
    EXPECT_FALSE(u.has_grad()) << lent;
  }
  // The seed itself, when the output's own backward is the one that throws.
  auto x = leaf({1.0});
  GradientTape tape;
  const auto z = sum(x * 2.0) * x;
  x.mutable_value()(0) = 3.0;
  const Array seed{1.0};
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(z, seed); }, {"modified in place"}));
  EXPECT_FALSE(z.has_grad());
}

// ---- hook events -------------------------------------------------------------------------------

TEST(Routing, AHookRemovingItselfWhileItRunsFinishesTheCallAndRunsNoMore) {
  for (const bool on_leaf : {true, false}) {
    auto x = leaf({1.0, 2.0});
    GradientTape tape(/*persistent=*/true);
    auto y = x * 1.0;
    Tensor<double>& hooked = on_leaf ? x : y;
    int calls = 0;
    std::uint64_t id = 0;
    // The captures live in the closure: reading them after remove_hook frees it would be a
    // use-after-free (the sanitized suite runs this).
    const std::vector<double> scale(64, 3.0);
    id = hooked.register_hook([&calls, &id, &hooked, scale](const Array& g) -> Hooked {
      ++calls;
      hooked.remove_hook(id);
      return g * scale[0];
    });
    const auto loss = sum(y * 2.0);
    tape.backward(loss);
    EXPECT_EQ(x.grad(), Array({6.0, 6.0})) << on_leaf;
    tape.backward(loss);
    EXPECT_EQ(x.grad(), Array({8.0, 8.0})) << on_leaf;  // second walk: no hook
    EXPECT_EQ(calls, 1) << on_leaf;
  }
}

// Each walk's total reaches grad() whether or not the hook is still there when the walk keeps or
// finishes it (another thread's walk removes it meanwhile).
TEST(Routing, TwoThreadsRacingAHookThatRemovesItselfBothAddTheirTotals) {
  for (int round = 0; round < 300; ++round) {
    auto x = leaf({1.0});
    std::uint64_t id = 0;
    std::atomic<int> removals{0};
    id = x.register_hook([&](const Array&) -> Hooked {
      if (removals++ == 0) x.remove_hook(id);
      return std::nullopt;
    });
    const auto walk = [&] {
      GradientTape tape;
      tape.backward(sum(x * 2.0));
    };
    std::thread a(walk), b(walk);
    a.join();
    b.join();
    ASSERT_EQ(x.grad(), Array({4.0})) << "round " << round;
  }
}

TEST(Routing, AHookRemovingALaterHookStillLetsItRunOnThisGradient) {
  auto x = leaf({1.0});
  std::uint64_t second = 0;
  int second_calls = 0;
  x.register_hook([&](const Array&) -> Hooked {
    x.remove_hook(second);
    return std::nullopt;
  });
  second = x.register_hook([&](const Array& g) -> Hooked {
    ++second_calls;
    return g * 2.0;
  });
  GradientTape tape;
  tape.backward(sum(x * 1.0));
  EXPECT_EQ(second_calls, 1);
  EXPECT_EQ(x.grad(), Array({2.0}));
}

TEST(Routing, AHookMayBuildAndDifferentiateAGraphOnATapeOfItsOwn) {
  auto x = leaf({3.0});
  Array inner_gradient;
  x.register_hook([&](const Array& g) -> Hooked {
    auto z = Tensor<double>(Array{2.0}, true);
    GradientTape own;
    own.backward(sum(z * z * z));  // d/dz z^3 = 12 at 2
    inner_gradient = z.grad();
    return g;
  });
  GradientTape tape;
  tape.backward(sum(x * x));
  EXPECT_EQ(inner_gradient, Array({12.0}));
  EXPECT_EQ(x.grad(), Array({6.0}));
}

// ---- create_graph ------------------------------------------------------------------------------

// f(x) = sum(h(x^3)) where the hook on the intermediate y = x^3 multiplies its gradient by y:
// d f / d x = 3x^2 * y = 3x^5 (the hooked "gradient"), and its derivative 15x^4.
TEST(Routing, TensorHookReplacementIsRecordedUnderCreateGraph) {
  auto x = leaf({1.5, -0.5});
  GradientTape tape(/*persistent=*/true);
  auto y = x * x * x;
  // Computes y again rather than capturing it: a hook holding its own tensor would be a cycle.
  y.register_hook([x](const Tensor<double>& g) -> std::optional<Tensor<double>> { return g * (x * x * x); });
  const auto g = tape.gradient(sum(y), {x}, {.create_graph = true});
  EXPECT_LT(max_abs_diff(g[0].value(), Array{3 * std::pow(1.5, 5), 3 * std::pow(-0.5, 5)}), 1e-12);
  const auto gg = tape.gradient(sum(g[0]), {x});
  EXPECT_LT(max_abs_diff(gg[0].value(), Array{15 * std::pow(1.5, 4), 15 * std::pow(-0.5, 4)}), 1e-12);
}

TEST(Routing, HessianVectorProductThroughAHookedIntermediateIsRecorded) {
  auto x = leaf({2.0, 3.0});
  // f = sum(y * y) with y = 1 * x, whose hook doubles dL/dy = 2y: grad f = 4x. The hook also
  // runs in the second walk, which reaches y too (grad f depends on y): H v = 2 * 4 v, as
  // torch.autograd.functional.hvp gives for the same f.
  const auto f = [](const std::vector<Tensor<double>>& in) {
    auto y = in[0] * 1.0;
    y.register_hook([](const Tensor<double>& g) -> std::optional<Tensor<double>> { return g * 2.0; });
    return sum(y * y);
  };
  const auto hv = hessian_vector_product<double>(f, {x}, {Tensor<double>(Array{1.0, -1.0})});
  EXPECT_EQ(hv[0].value(), Array({8.0, -8.0}));
}

TEST(Routing, AnArrayHookReplacingAGradientUnderCreateGraphIsAnError) {
  auto x = leaf({2.0});
  x.register_hook([](const Array& g) -> Hooked { return g * 2.0; });
  GradientTape tape;
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.gradient(sum(x * x), {x}, {.create_graph = true}); },
                                     {"create_graph: gradient hook 1 of tensor [1]", "works on arrays",
                                      "Register a hook on tensors"}));
}

TEST(Routing, AnObservingArrayHookIsFineUnderCreateGraphAndSeesTheValue) {
  auto x = leaf({2.0});
  Array seen;
  x.register_hook([&](const Array& g) -> Hooked {
    seen = g;
    return std::nullopt;
  });
  GradientTape tape;
  const auto g = tape.gradient(sum(x * x), {x}, {.create_graph = true});
  EXPECT_EQ(seen, Array({4.0}));
  EXPECT_EQ(g[0].value(), Array({4.0}));
}

}  // namespace
}  // namespace tapegrad
