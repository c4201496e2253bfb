// SpreadRule (autograd/base/spread.h): told made-up times, it must try both ways, keep to the
// faster, retry the other now and then, follow a change, and not be swayed by one slow call.
// Whether the ways give the same bits is checked on a whole training step in test_copy_task.cpp.
#include <chrono>
#include <cstddef>
#include <limits>
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

TEST(SpreadRule, TriesBothWaysThenKeepsToTheFasterAndRetriesTheOther) {
  for (const bool spread_faster : {false, true}) {
    SpreadRule rule;
    // The other way 30% slower: retried every kRetryEvery-th call.
    const auto ways = run_calls(rule, 20 * SpreadRule::kRetryEvery, spread_faster ? 130 : 100,
                                spread_faster ? 100 : 130);
    const std::size_t trials = 2 * (SpreadRule::kTrials + 1);
    // The trials alternate, so each way has kTrials counted calls after its uncounted first.
    EXPECT_EQ(spread_count({ways.begin(), ways.begin() + trials}), SpreadRule::kTrials + 1);
    const std::size_t after = ways.size() - trials, other_way = spread_faster ? after - spread_count(ways, trials)
                                                                             : spread_count(ways, trials);
    EXPECT_GE(other_way, after / SpreadRule::kRetryEvery - 1) << spread_faster;
    EXPECT_LE(other_way, after / SpreadRule::kRetryEvery + 1) << spread_faster;
  }
}

// Retrying a way 3x slower every 32nd call would cost 6% of the time; the rule keeps it to 1%,
// once the first retries (after 32 calls, then 64, 128, ...) have confirmed the trials.
TEST(SpreadRule, RetriesAFarSlowerWayRarelyEnoughToCostAtMostOnePercent) {
  constexpr std::uint32_t kMany = 100;  // retries: the doubling has reached its cap
  EXPECT_EQ(SpreadRule::retry_interval(1.1f, kMany), SpreadRule::kRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(3.0f, kMany), 200u);
  EXPECT_EQ(SpreadRule::retry_interval(1000.0f, kMany), SpreadRule::kMaxRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(std::numeric_limits<float>::infinity(), kMany), SpreadRule::kMaxRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(std::numeric_limits<float>::quiet_NaN(), kMany), SpreadRule::kMaxRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(1000.0f, 0), SpreadRule::kRetryEvery);
  EXPECT_EQ(SpreadRule::retry_interval(1000.0f, 2), 4 * SpreadRule::kRetryEvery);
  SpreadRule rule;
  const auto ways = run_calls(rule, 4000, 100, 300);
  // After 32, 64 and 128 calls, then every 200.
  const std::size_t retries = spread_count(ways, 2 * (SpreadRule::kTrials + 1));
  EXPECT_GE(retries, 3 + (4000u - 8 - 224) / 200 - 1);
  EXPECT_LE(retries, 3 + (4000u - 8 - 224) / 200 + 1);
  // A way 1000x slower is still retried: after 32, 64, ..., 4096 calls (8 retries, 8160 calls),
  // then every 4096.
  SpreadRule far;
  EXPECT_EQ(spread_count(run_calls(far, 8 + 8160 + 4096, 1, 1000), 8), 9u);
}

// The failure that made the retries start often: the trials ran in a program's first steps, where
// every call on the calling thread wrote to fresh pages and took 50x its time, so the measured
// rule spread a relu for thousands of calls that was faster alone.
TEST(SpreadRule, TrialsSpoiltByFirstStepsAreCorrectedByTheFirstRetry) {
  SpreadRule rule;
  run_calls(rule, 2 * (SpreadRule::kTrials + 1), 800000, 14000);  // cold: alone looks 57x slower
  const auto ways = run_calls(rule, 200, 10000, 14000);           // warm: alone is faster
  // From the retry after 32 calls on, alone, but for the spread way's own retries (after 32, 64).
  EXPECT_LE(spread_count(ways, 40), 4u);
}

// Spreading 10% faster by its own time is not enough: the calls after it pay for its output being
// in two cores' caches.
TEST(SpreadRule, SpreadsOnlyWhenClearlyFaster) {
  SpreadRule rule;
  const auto ways = run_calls(rule, 10 * SpreadRule::kRetryEvery, 110, 100);
  EXPECT_LE(spread_count(ways, 8), 10u);  // retries only
  SpreadRule clearly;
  const auto clearly_ways = run_calls(clearly, 10 * SpreadRule::kRetryEvery, 130, 100);
  EXPECT_GE(spread_count(clearly_ways, 8), clearly_ways.size() - 8 - 10);
}

// A call of a millisecond or more spread is never tried alone, however fast the made-up times say
// it would be: such calls are few, and a trial could cost half of one.
TEST(SpreadRule, ALongCallSpreadFromItsFirstOn) {
  SpreadRule rule;
  const auto ways = run_calls(rule, 100, 1000, 2000000);
  EXPECT_EQ(spread_count(ways), 100u);
  SpreadRule shorter;  // half a millisecond: tried alone, and kept alone when that is faster
  const auto shorter_ways = run_calls(shorter, 100, 1000, 500000);
  EXPECT_TRUE(shorter_ways[0]);  // spreading first
  EXPECT_LE(spread_count(shorter_ways), SpreadRule::kTrials + 1 + 2);  // its trials, 2 retries
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
