#include "autograd/base/spread.h"

#include <algorithm>
#include <bit>
#include <limits>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

namespace tapegrad {

namespace {
std::atomic<SpreadPolicy> policy{SpreadPolicy::kMeasured};
}  // namespace

void set_spread_policy(SpreadPolicy p) { policy.store(p, std::memory_order_relaxed); }
SpreadPolicy spread_policy() { return policy.load(std::memory_order_relaxed); }

std::size_t threads_available() {
  const auto arena = static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  return std::min(arena, tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
}

namespace {
// Timing noise is one-sided (preemption, page faults, cold caches only ever add time), so a time
// below a way's estimate replaces it, and one above moves it by this weight ...
constexpr float kNewWeight = 0.25f;
// ... counted as at most this many times the estimate: one call the host preempted must not make
// the faster way look slower for the next hundred calls.
constexpr float kMaxJump = 2.0f;

// When the last spread call on any thread ended, in steady_clock nanoseconds.
std::atomic<std::int64_t> last_spread_end{std::numeric_limits<std::int64_t>::min() / 2};
}  // namespace

bool spread_workers_awake(std::chrono::steady_clock::time_point now) {
  const std::int64_t t = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  return t - last_spread_end.load(std::memory_order_relaxed) < SpreadRule::kAwakeNs;
}

void spread_ended(std::chrono::steady_clock::time_point when) {
  last_spread_end.store(std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count(),
                        std::memory_order_relaxed);
}

std::size_t SpreadRule::group_of(std::size_t work) {
  return std::min<std::size_t>(std::bit_width(work), std::tuple_size_v<decltype(groups_)> - 1);
}

SpreadRule::Decision SpreadRule::decide(std::size_t work, std::size_t threads, bool awake) {
  if (threads <= 1) return {false, false};
  switch (spread_policy()) {
    case SpreadPolicy::kAlwaysSpread:
      return {true, false};
    case SpreadPolicy::kNeverSpread:
      return {false, false};
    case SpreadPolicy::kMeasured:
      break;
  }
  Group& group = groups_[group_of(work)];
  const std::uint32_t call = group.calls.fetch_add(1, std::memory_order_relaxed);
  const std::uint32_t serial_calls = group.ways[kAlone].calls.load(std::memory_order_relaxed);
  const std::uint32_t asleep_calls = group.ways[kSpreadAsleep].calls.load(std::memory_order_relaxed);
  const std::uint32_t awake_calls = group.ways[kSpreadAwake].calls.load(std::memory_order_relaxed);
  const std::uint32_t spread_calls = asleep_calls + awake_calls;
  const float serial = group.ways[kAlone].ns_per_unit.load(std::memory_order_relaxed);
  // Spreading as it would be now, with the workers awake or asleep; the other if not measured yet.
  const bool use_awake = awake ? awake_calls > 0 : asleep_calls == 0;
  const float spread =
      group.ways[use_awake ? kSpreadAwake : kSpreadAsleep].ns_per_unit.load(std::memory_order_relaxed);
  // A call this long spread is never tried alone: the rest is explained in the header.
  if (spread_calls > 0 && spread * static_cast<float>(work) >= kSpreadAlwaysPaysNs) return {true, true};
  // Trials: kTrials + 1 calls spread, then as many alone (the first call each way is not counted
  // in the choice).
  if (spread_calls <= kTrials) return {true, true};
  if (serial_calls <= kTrials) return {false, true};
  const bool spread_is_faster = spread * kSpreadMargin < serial;
  std::uint32_t burst_left = group.burst_left.load(std::memory_order_relaxed);
  while (burst_left > 0 &&
         !group.burst_left.compare_exchange_weak(burst_left, burst_left - 1, std::memory_order_relaxed)) {
  }
  if (burst_left > 0) return {group.burst_spreads.load(std::memory_order_relaxed), true};
  const std::uint32_t last_retry = group.last_retry.load(std::memory_order_relaxed);
  const std::uint32_t bursts = ((spread_is_faster ? serial_calls : spread_calls) - (kTrials + 1)) / kRetryBurst;
  // Running alone is retried only when the workers are asleep anyway: a burst alone in the middle
  // of a run of spread calls would let them fall asleep, and the run would end.
  const bool postponed = spread_is_faster && awake;
  const float hidden_cost = spread_is_faster ? 0.0f : kRetrySpreadCostNs / (serial * static_cast<float>(work));
  if (!postponed && call - last_retry >= retry_interval(spread_is_faster ? serial / spread : spread / serial, bursts,
                                                        hidden_cost)) {
    group.last_retry.store(call, std::memory_order_relaxed);
    group.burst_spreads.store(!spread_is_faster, std::memory_order_relaxed);
    group.burst_left.store(kRetryBurst - 1, std::memory_order_relaxed);
    return {!spread_is_faster, true};
  }
  return {spread_is_faster, true};
}

std::uint32_t SpreadRule::retry_interval(float slowdown, std::uint32_t bursts, float hidden_cost) {
  const std::uint32_t doubling = kRetryEvery << std::min(bursts, kDoublings);
  const float cost = std::max(slowdown - 1.0f, 0.0f) + std::max(hidden_cost, 0.0f);
  if (!(cost < static_cast<float>(kMaxRetryEvery))) return doubling;  // also NaN, infinity
  const float calls = static_cast<float>(kRetryBurst) * cost / kRetryCost;
  return std::min(std::clamp(static_cast<std::uint32_t>(calls), kRetryEvery, kMaxRetryEvery), doubling);
}

void SpreadRule::measured(std::size_t work, bool spread, std::chrono::nanoseconds took, bool awake) {
  Way& way = groups_[group_of(work)].ways[!spread ? kAlone : awake ? kSpreadAwake : kSpreadAsleep];
  const std::uint32_t earlier = way.calls.fetch_add(1, std::memory_order_relaxed);
  const float time = static_cast<float>(took.count()) / static_cast<float>(std::max<std::size_t>(work, 1));
  if (earlier <= 1) {  // the first call's time only until the second's replaces it
    way.ns_per_unit.store(time, std::memory_order_relaxed);
    return;
  }
  const float average = way.ns_per_unit.load(std::memory_order_relaxed);
  if (time <= average) {
    way.ns_per_unit.store(time, std::memory_order_relaxed);
    return;
  }
  const float counted = average > 0 ? std::min(time, kMaxJump * average) : time;
  way.ns_per_unit.store(average + kNewWeight * (counted - average), std::memory_order_relaxed);
}

}  // namespace tapegrad
