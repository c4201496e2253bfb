// SpreadRule (autograd/base/spread.h): told made-up times, it must try both ways, keep to the
// faster, retry the other now and then, follow a change, and not be swayed by one slow call.
// Whether the ways give the same bits is checked on a whole training step in test_copy_task.cpp.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <limits>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/base/spread.h"

namespace tapegrad {
namespace {

using std::chrono::nanoseconds;

constexpr std::size_t kWork = 100000;

class PolicyDuring {
 public:
  explicit PolicyDuring(SpreadPolicy policy) { set_spread_policy(policy); }
  ~PolicyDuring() { set_spread_policy(SpreadPolicy::kMeasured); }
  PolicyDuring(const PolicyDuring&) = delete;
  PolicyDuring& operator=(const PolicyDuring&) = delete;
};

// Calls the rule `calls` times, each call taking serial_ns or spread_ns in all; returns the ways.
std::vector<bool> run_calls(SpreadRule& rule, std::size_t calls, long serial_ns, long spread_ns,
                            std::size_t work = kWork) {
  std::vector<bool> ways;
  for (std::size_t i = 0; i < calls; ++i) {
    const SpreadRule::Decision d = rule.decide(work, 2);
    EXPECT_TRUE(d.timed);
    rule.measured(work, d.spread, nanoseconds(d.spread ? spread_ns : serial_ns));
    ways.push_back(d.spread);
  }
  return ways;
}

std::size_t spread_count(const std::vector<bool>& ways, std::size_t from = 0) {
  std::size_t n = 0;
  for (std::size_t i = from; i < ways.size(); ++i) n += ways[i];
  return n;
}

TEST(SpreadRule, OneThreadRunsOnTheCallingThreadUntimed) {
  SpreadRule rule;
  for (int i = 0; i < 10; ++i) {
    const SpreadRule::Decision d = rule.decide(kWork, 1);
    EXPECT_FALSE(d.spread);
    EXPECT_FALSE(d.timed);
  }
}

TEST(SpreadRule, APolicyOverridesTheMeasure) {
  SpreadRule rule;
  run_calls(rule, 100, 100, 1000);  // serial measured much faster
  {
    const PolicyDuring always(SpreadPolicy::kAlwaysSpread);
    const SpreadRule::Decision d = rule.decide(kWork, 2);
    EXPECT_TRUE(d.spread);
    EXPECT_FALSE(d.timed);
    EXPECT_FALSE(rule.decide(kWork, 1).spread);  // one thread has nothing to spread over
  }
  const PolicyDuring never(SpreadPolicy::kNeverSpread);
  const SpreadRule::Decision d = rule.decide(kWork, 2);
  EXPECT_FALSE(d.spread);
  EXPECT_FALSE(d.timed);
}

constexpr std::size_t kTrialCalls = 2 * (SpreadRule::kTrials + 1);
constexpr std::uint32_t kBurst = SpreadRule::kRetryBurst;

TEST(SpreadRule, TriesBothWaysInTurnThenKeepsToTheFasterAndRetriesTheOtherInBursts) {
  SpreadRule rule;
  // Alone 5% faster on calls of 0.9 ms: spreading is retried every kRetryEvery calls, kRetryBurst
  // calls in a row (what a spread call costs beyond its time, kRetrySpreadCostNs, is 4% of it).
  const auto ways = run_calls(rule, kTrialCalls + 20 * SpreadRule::kRetryEvery, 900000, 945000);
  // The trials: kTrials + 1 calls spread, then as many alone (the first of each not counted).
  for (std::size_t i = 0; i < kTrialCalls; ++i) EXPECT_EQ(ways[i], i <= SpreadRule::kTrials) << i;
  // Then: bursts of spread calls in a row, 20 of them, every 32 calls counted from the first trial.
  EXPECT_EQ(spread_count(ways, kTrialCalls), 20 * kBurst);
  for (std::size_t i = SpreadRule::kRetryEvery; i < SpreadRule::kRetryEvery + kBurst; ++i) EXPECT_TRUE(ways[i]) << i;
}

// Retrying a way 3x slower in every 32 calls would cost 19% of the time; the rule keeps it to 1%,
// once the first bursts (after 32 calls, then 64, 128, ...) have confirmed the trials.
TEST(SpreadRule, RetriesAFarSlowerWayRarelyEnoughToCostAtMostOnePercent) {
  constexpr std::uint32_t kMany = 100;  // bursts: the doubling has reached its cap
  EXPECT_EQ(SpreadRule::retry_interval(1.05f, kMany), SpreadRule::kRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(3.0f, kMany), 600u);  // 3 calls costing 2x more each per 600
  EXPECT_EQ(SpreadRule::retry_interval(1000.0f, kMany), SpreadRule::kMaxRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(std::numeric_limits<float>::infinity(), kMany), SpreadRule::kMaxRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(std::numeric_limits<float>::quiet_NaN(), kMany), SpreadRule::kMaxRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(1000.0f, 0), SpreadRule::kRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(1000.0f, 2), 4 * SpreadRule::kRetryEvery);
  // Spreading 2x slower on calls of 0.4 ms, plus kRetrySpreadCostNs (0.1x): bursts after 32, 64,
  // 128 and 256 calls, then every 3 * 1.1 / 1% = 330: 15 bursts.
  SpreadRule rule;
  const auto ways = run_calls(rule, kTrialCalls + 32 + 64 + 128 + 256 + 330 * 11, 400000, 800000);
  EXPECT_EQ(spread_count(ways, kTrialCalls), 15 * kBurst);
  // A way 1000x slower is still retried: after 32, 64, ..., 4096 calls (8 bursts, 8160 calls),
  // then every 4096.
  SpreadRule far;
  EXPECT_EQ(spread_count(run_calls(far, kTrialCalls + 8160 + 4096, 1, 1000), kTrialCalls), 9 * kBurst);
}

// A spread call costs more than its own time shows (kRetrySpreadCostNs: caches, woken workers), so
// spreading a short call is retried more rarely than a long one that measured as much slower.
TEST(SpreadRule, RetriesSpreadingOfShortCallsMoreRarely) {
  EXPECT_EQ(SpreadRule::retry_interval(1.5f, 100, 0.5f), 300u);  // 3 calls costing 1x more each per 300
  EXPECT_EQ(SpreadRule::retry_interval(1.01f, 100, 40.0f), SpreadRule::kMaxRetryEvery);
  // Spreading 1% slower: a 1 us call (the hidden cost 40x its time) is retried after 32, 64, ...,
  // 4096 calls (8 bursts in 8160 calls); a 0.9 ms call every 32 calls (255 bursts).
  SpreadRule short_call, long_call;
  EXPECT_EQ(spread_count(run_calls(short_call, kTrialCalls + 8160, 1000, 1010), kTrialCalls), 8 * kBurst);
  EXPECT_EQ(spread_count(run_calls(long_call, kTrialCalls + 8160, 900000, 909000), kTrialCalls), 255 * kBurst);
}

// The failure that made the retries start often: the trials ran in a program's first steps, where
// every call on the calling thread wrote to fresh pages and took 50x its time, so the measured
// rule spread a relu for thousands of calls that was faster alone.
TEST(SpreadRule, TrialsSpoiltByFirstStepsAreCorrectedByTheFirstRetry) {
  SpreadRule rule;
  run_calls(rule, kTrialCalls, 800000, 14000);           // cold: alone looks 57x slower
  const auto ways = run_calls(rule, 200, 10000, 14000);  // warm: alone is faster
  // From the burst after 32 calls on, alone, but for spreading's own bursts (after 32, 64).
  EXPECT_LE(spread_count(ways, 32 + kBurst), 2 * kBurst);
}

// The failure that made retries come in bursts: a spread call right after calls alone wakes TBB's
// workers and looks slow; the next ones, finding them awake, show what spreading every call gives.
TEST(SpreadRule, ABurstShowsWhatSpreadingCallAfterCallGives) {
  SpreadRule rule;
  run_calls(rule, 200, 100, 300);  // the host's second core busy: spreading is slow, even warm
  bool previous_spread = false;
  std::size_t last_stretch_spread = 0;
  for (std::size_t i = 0; i < 2000; ++i) {
    const SpreadRule::Decision d = rule.decide(kWork, 2);
    // The core free again: alone 100 ns; spread 300 ns right after a call alone (waking the
    // workers), 50 ns right after a spread call.
    rule.measured(kWork, d.spread, nanoseconds(d.spread ? (previous_spread ? 50 : 300) : 100));
    previous_spread = d.spread;
    if (i >= 1000) last_stretch_spread += d.spread;
  }
  EXPECT_GE(last_stretch_spread, 950u);
}

// Spreading costs 300 ns when the workers are asleep and 50 ns when a spread call just ended;
// alone costs 100 ns. Called back to back, a kernel keeps its workers awake and spreads; called
// between kernels that run alone, it finds them asleep every time and runs alone.
TEST(SpreadRule, JudgesSpreadingWithTheWorkersAsTheyAreNow) {
  const auto run = [](bool back_to_back) {
    SpreadRule rule;
    bool previous_spread = false;
    std::size_t spread_later = 0;
    for (std::size_t i = 0; i < 2000; ++i) {
      const bool awake = back_to_back && previous_spread;
      const SpreadRule::Decision d = rule.decide(kWork, 2, awake);
      rule.measured(kWork, d.spread, nanoseconds(d.spread ? (awake ? 50 : 300) : 100), awake);
      previous_spread = d.spread;
      if (i >= 1000) spread_later += d.spread;
    }
    return spread_later;
  };
  EXPECT_GE(run(true), 990u);
  EXPECT_LE(run(false), 50u);
}

// Spreading 10% faster by its own time is not enough: the calls after it pay for its output being
// in two cores' caches. (Calls of 0.8-0.9 ms, so that the retries come every kRetryEvery calls.)
TEST(SpreadRule, SpreadsOnlyWhenClearlyFaster) {
  SpreadRule rule;
  const auto ways = run_calls(rule, kTrialCalls + 10 * SpreadRule::kRetryEvery, 880000, 800000);
  EXPECT_EQ(spread_count(ways, kTrialCalls), 10 * kBurst);  // the bursts only
  SpreadRule clearly;
  const auto clearly_ways = run_calls(clearly, kTrialCalls + 10 * SpreadRule::kRetryEvery, 910000, 700000);
  EXPECT_GE(spread_count(clearly_ways, kTrialCalls), 10 * SpreadRule::kRetryEvery - 10 * kBurst);
}

// A call of a millisecond or more spread is never tried alone, however fast the made-up times say
// it would be: such calls are few, and a trial could cost half of one.
TEST(SpreadRule, ALongCallSpreadFromItsFirstOn) {
  SpreadRule rule;
  const auto ways = run_calls(rule, 100, 1000, 2000000);
  EXPECT_EQ(spread_count(ways), 100u);
  SpreadRule shorter;  // half a millisecond: tried alone, and kept alone when that is faster
  const auto shorter_ways = run_calls(shorter, 100, 1000, 500000);
  EXPECT_EQ(spread_count(shorter_ways), SpreadRule::kTrials + 1 + 2 * kBurst);  // trials, 2 bursts
}

TEST(SpreadRule, FollowsWhenTheOtherWayBecomesFaster) {
  SpreadRule rule;
  const auto before = run_calls(rule, 10 * SpreadRule::kRetryEvery, 100, 300);
  EXPECT_LT(spread_count(before, before.size() / 2), before.size() / 8);
  // The host frees the second core: spreading now takes a fifth of the time.
  const auto after = run_calls(rule, 40 * SpreadRule::kRetryEvery, 100, 20);
  EXPECT_GT(spread_count(after, after.size() / 2), after.size() / 2 * 9 / 10);
}

TEST(SpreadRule, OneSlowCallDoesNotMakeTheFasterWayLookSlower) {
  SpreadRule rule;
  run_calls(rule, 4 * SpreadRule::kRetryEvery, 100, 150);
  // One call on the calling thread preempted for a millisecond.
  rule.measured(kWork, false, nanoseconds(1000000));
  std::size_t spread = 0;
  for (std::size_t i = 0; i < SpreadRule::kRetryEvery - 1; ++i) {
    const SpreadRule::Decision d = rule.decide(kWork, 2);
    spread += d.spread;
    rule.measured(kWork, d.spread, nanoseconds(d.spread ? 150 : 100));
  }
  EXPECT_LE(spread, 1u);  // at most the regular retry
}

TEST(SpreadRule, SizesAreMeasuredApart) {
  SpreadRule rule;
  constexpr std::size_t kSmall = 1000, kLarge = std::size_t{1} << 24;
  for (std::size_t i = 0; i < 8 * SpreadRule::kRetryEvery; ++i) {
    const SpreadRule::Decision small = rule.decide(kSmall, 2);
    rule.measured(kSmall, small.spread, nanoseconds(small.spread ? 5000 : 1000));
    const SpreadRule::Decision large = rule.decide(kLarge, 2);
    rule.measured(kLarge, large.spread, nanoseconds(large.spread ? 1000000 : 2000000));
  }
  std::size_t small_spread = 0, large_spread = 0;
  for (std::size_t i = 1; i < SpreadRule::kRetryEvery; ++i) {  // a stretch without a retry
    small_spread += rule.decide(kSmall, 2).spread;
    large_spread += rule.decide(kLarge, 2).spread;
  }
  EXPECT_LE(small_spread, 1u);
  EXPECT_GE(large_spread, SpreadRule::kRetryEvery - 2);
}

// One kernel called from several threads at once shares its rule: the counts and estimates race
// (relaxed atomics), but every decision stays one of the two ways and the faster one still wins.
TEST(SpreadRule, SeveralThreadsSharingOneRuleStillFindTheFasterWay) {
  SpreadRule rule;
  std::vector<std::thread> threads;
  std::atomic<std::size_t> spread_late{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (std::size_t i = 0; i < 20000; ++i) {
        const SpreadRule::Decision d = rule.decide(kWork, 2);
        rule.measured(kWork, d.spread, nanoseconds(d.spread ? 300 : 100));
        if (i >= 10000) spread_late += d.spread;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(spread_late.load(), 4u * 10000 / 50);  // retries only, at most 2%
}

TEST(SpreadRule, RunSpreadRunsTheDecidedWayOnce) {
  SpreadRule rule;
  const PolicyDuring never(SpreadPolicy::kNeverSpread);
  int serial = 0, spread = 0;
  run_spread(rule, kWork, [&] { ++serial; }, [&] { ++spread; });
  EXPECT_EQ(serial, 1);
  EXPECT_EQ(spread, 0);
  std::vector<int> seen(100, 0);
  spread_indices(rule, kWork, seen.size(), [&](std::size_t i) { ++seen[i]; });
  EXPECT_EQ(seen, std::vector<int>(100, 1));
}

}  // namespace
}  // namespace tapegrad
