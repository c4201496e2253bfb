// What the trust rules promise of threads (docs/tape.md, "Threads"), each with exact results:
// hooked leaves walked by several threads at once, one Generator drawn from by several threads,
// backward from several threads into one model's parameters (zero_grad beside them), and hooks
// registered and removed on one thread while another walks. Values are small integers, so every
// total is exact in whatever order the threads add.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "autograd/base/generator.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "nn/linear.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;
using Hooked = std::optional<Array>;

constexpr int kThreads = 4;

// Runs body(thread index) on kThreads threads at once and waits for them.
template <class Body> void on_threads(const Body& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&body, t] { body(t); });
  for (auto& thread : threads) thread.join();
}

// Two shared leaves, each with hooks, walked by every thread on its own tapes: each walk's
// gradient of sum(a * 2) + sum(a * b) + sum(b) is 2 + b = 5 for a and a + 1 = 2 for b (a = 1,
// b = 3). a's array hook sees exactly 5 and replaces it by 1; b's tensor hook doubles it; an
// observing hook counts b's calls. One call each per walk, on that walk's own total.
TEST(ThreadMatrix, HookedLeavesWalkedByThreadsAtOnceGetOneCallPerWalkOnItsTotal) {
  constexpr int kWalks = 50;
  Tensor<double> a(Array{1.0, 1.0}, true), b(Array{3.0, 3.0}, true);
  std::atomic<int> a_calls{0}, a_wrong{0}, b_calls{0}, b_observed{0}, b_wrong{0};
  a.register_hook([&](const Array& g) -> Hooked {
    ++a_calls;
    if (g != Array{5.0, 5.0}) ++a_wrong;
    return Array{1.0, 1.0};
  });
  b.register_hook([&](const Tensor<double>& g) -> std::optional<Tensor<double>> {
    ++b_calls;
    if (g.value() != Array{2.0, 2.0}) ++b_wrong;
    return g * 2.0;
  });
  b.register_hook([&](const Array& g) -> Hooked {
    ++b_observed;
    if (g != Array{4.0, 4.0}) ++b_wrong;  // the previous hook's replacement
    return std::nullopt;
  });
  on_threads([&](int) {
    for (int w = 0; w < kWalks; ++w) {
      GradientTape tape;
      tape.backward(sum(a * 2.0) + sum(a * b) + sum(b));
    }
  });
  constexpr int kTotal = kThreads * kWalks;
  EXPECT_EQ(a_calls, kTotal);
  EXPECT_EQ(b_calls, kTotal);
  EXPECT_EQ(b_observed, kTotal);
  EXPECT_EQ(a_wrong, 0);
  EXPECT_EQ(b_wrong, 0);
  EXPECT_EQ(a.grad(), Array({1.0 * kTotal, 1.0 * kTotal}));
  EXPECT_EQ(b.grad(), Array({4.0 * kTotal, 4.0 * kTotal}));
}

// The same leaf as a gradient() source on every thread: each call returns its own walk's hooked
// total, and no grad() changes.
TEST(ThreadMatrix, HookedLeafAsAGradientSourceOnThreadsReturnsEachWalksOwnTotal) {
  constexpr int kWalks = 50;
  Tensor<double> x(Array{2.0}, true);
  std::atomic<int> calls{0};
  x.register_hook([&](const Tensor<double>& g) -> std::optional<Tensor<double>> {
    ++calls;
    return g + 1.0;
  });
  std::atomic<int> wrong{0};
  on_threads([&](int t) {
    for (int w = 0; w < kWalks; ++w) {
      GradientTape tape;
      const auto g = tape.gradient(sum(x * x) * static_cast<double>(t + 1), {x});
      if (g[0].value() != Array{4.0 * (t + 1) + 1.0}) ++wrong;  // 2x (t + 1), then the hook's + 1
    }
  });
  EXPECT_EQ(calls, kThreads * kWalks);
  EXPECT_EQ(wrong, 0);
  EXPECT_FALSE(x.has_grad());
}

// A hook on a leaf that threads walk into, clearing the tape of the thread that registered it:
// from another thread's walk that is refused (TapeError, so that walk throws), and the tape keeps
// its entries. Two such hooks clearing it at once freed its entries twice (fuzz_tape_sequences).
TEST(ThreadMatrix, AHookClearingThisThreadsTapeFromAnotherThreadsWalkIsRefused) {
  constexpr int kWalks = 20;
  GradientTape mine(/*persistent=*/true);
  Tensor<double> x(Array{1.0, 2.0}, true);
  const Tensor<double> recorded = x * 3.0;
  ASSERT_EQ(mine.size(), 1u);
  const auto hook = x.register_hook([&](const Array&) -> Hooked {
    mine.clear();
    return std::nullopt;
  });
  std::atomic<int> refused{0}, other{0};
  on_threads([&](int) {
    for (int w = 0; w < kWalks; ++w) {
      try {
        GradientTape own;
        own.backward(sum(x * 2.0));
      } catch (const TapeError& e) {
        if (std::string(e.what()).find("GradientTape::clear: this tape belongs to the thread") == 0) ++refused;
        else ++other;
      }
    }
  });
  EXPECT_EQ(refused, kThreads * kWalks);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(mine.size(), 1u);
  EXPECT_FALSE(x.has_grad()) << "every walk threw in the hook, before adding into x";
  x.remove_hook(hook);
  mine.backward(sum(recorded));
  EXPECT_EQ(x.grad(), Array({3.0, 3.0}));
}

// Draws of one size from a shared Generator reserve whole counter ranges, so however the threads
// interleave, together they get exactly the draws one thread would have made, in some order.
TEST(ThreadMatrix, ASharedGeneratorGivesThreadsTheDrawsOfOneThreadNeverRepeated) {
  constexpr int kDraws = 200;
  constexpr std::size_t kSize = 6;
  Generator shared(42);
  std::vector<std::vector<std::vector<double>>> drawn(kThreads);
  on_threads([&](int t) {
    for (int d = 0; d < kDraws; ++d) {
      std::vector<double> draw(kSize);
      shared.fill_uniform(draw.data(), kSize);
      drawn[t].push_back(std::move(draw));
    }
  });
  Generator alone(42);
  std::multiset<std::vector<double>> expected, got;
  for (int d = 0; d < kThreads * kDraws; ++d) {
    std::vector<double> draw(kSize);
    alone.fill_uniform(draw.data(), kSize);
    expected.insert(std::move(draw));
  }
  for (const auto& thread : drawn) got.insert(thread.begin(), thread.end());
  EXPECT_EQ(shared.offset(), alone.offset());
  EXPECT_EQ(got, expected);
  std::set<double> distinct;
  for (const auto& draw : got) distinct.insert(draw.begin(), draw.end());
  EXPECT_EQ(distinct.size(), got.size() * kSize);
}

TEST(ThreadMatrix, SharedGeneratorIntegersAndSeedsAreNeverRepeated) {
  constexpr int kDraws = 500;
  Generator shared(7);
  std::vector<std::vector<std::uint64_t>> seeds(kThreads);
  on_threads([&](int t) {
    for (int d = 0; d < kDraws; ++d) seeds[t].push_back(shared.next_u64());
  });
  std::set<std::uint64_t> distinct;
  for (const auto& s : seeds) distinct.insert(s.begin(), s.end());
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kThreads * kDraws));
}

// One Linear's parameters, backward from every thread on its own tape: y = x W^T + b with x all
// ones ([1, 3]), loss sum(y) * (t + 1), so each walk adds t + 1 to every weight and bias entry.
TEST(ThreadMatrix, ConcurrentBackwardIntoOneLinearsParametersAddsEveryWalk) {
  constexpr int kWalks = 40;
  Generator gen(3);
  nn::Linear<double> lin(3, 2, gen);
  on_threads([&](int t) {
    const Tensor<double> x(Array(xt::ones<double>({1, 3})));
    for (int w = 0; w < kWalks; ++w) {
      GradientTape tape;
      tape.backward(sum(lin(x)) * static_cast<double>(t + 1));
    }
  });
  const double total = kWalks * kThreads * (kThreads + 1) / 2.0;
  EXPECT_EQ(lin.weight().grad(), Array(xt::ones<double>({2, 3}) * total));
  EXPECT_EQ(lin.bias().grad(), Array(xt::ones<double>({2}) * total));
}

// zero_grad beside concurrent backward: every walk adds whole (accumulation is serialised), so
// the gradient left is a whole number of walks' contributions, equal in every entry.
TEST(ThreadMatrix, ZeroGradBesideConcurrentBackwardLeavesAWholeNumberOfWalks) {
  constexpr int kWalks = 40;
  Generator gen(4);
  nn::Linear<double> lin(3, 2, gen);
  std::atomic<bool> walking{true};
  std::thread zeroing([&] {
    while (walking) lin.zero_grad();
  });
  on_threads([&](int) {
    const Tensor<double> x(Array(xt::ones<double>({1, 3})));
    for (int w = 0; w < kWalks; ++w) {
      GradientTape tape;
      tape.backward(sum(lin(x)));
    }
  });
  walking = false;
  zeroing.join();
  if (!lin.weight().has_grad()) return;  // zeroed after the last walk
  const Array& g = lin.weight().grad();
  const double walks = g(0, 0);
  EXPECT_EQ(walks, std::round(walks));
  EXPECT_GE(walks, 0.0);
  EXPECT_LE(walks, kThreads * kWalks);
  EXPECT_EQ(g, Array(xt::ones<double>({2, 3}) * walks));
}

// A hook registered and removed over and over on one thread while another walks: the permanent
// hook runs once per walk, the toggled one doubles the walks it ran on, so the total is the walks
// plus the toggled calls, times the gradient.
TEST(ThreadMatrix, HookRegisteredAndRemovedWhileAnotherThreadWalks) {
  constexpr int kWalks = 300;
  Tensor<double> x(Array{1.0}, true);
  std::atomic<int> permanent_calls{0}, toggled_calls{0};
  x.register_hook([&](const Array&) -> Hooked {  // stays for the whole test
    ++permanent_calls;
    return std::nullopt;
  });
  std::atomic<bool> walking{true};
  int registrations = 0;
  std::thread toggling([&] {
    while (walking) {
      const auto id = x.register_hook([&](const Tensor<double>& g) -> std::optional<Tensor<double>> {
        ++toggled_calls;
        return g * 2.0;
      });
      ++registrations;
      x.remove_hook(id);
    }
  });
  std::thread walker([&] {
    for (int w = 0; w < kWalks; ++w) {
      GradientTape tape;
      tape.backward(sum(x * 3.0));
    }
    walking = false;
  });
  walker.join();
  toggling.join();
  EXPECT_EQ(permanent_calls, kWalks);
  EXPECT_LE(toggled_calls, kWalks);
  EXPECT_GT(registrations, 0);
  EXPECT_EQ(x.grad(), Array({3.0 * (kWalks + toggled_calls)}));
}

}  // namespace
}  // namespace tapegrad
