#pragma once
// Whether a kernel's fixed partition runs on the calling thread or is spread over TBB's workers,
// decided at each call site, per size, from what the two ways measured in this process.
//
// Why measured and not a constant: what a second thread is worth depends on the CPU and on the
// host. The same size rules made the tiny copy-task step 1.28x faster at 2 threads on a Zen 3 VM
// and 1.12-1.20x slower on a Zen 5 VM, where element-wise passes gain nothing at any size; and on
// one VM the second vCPU's worth moves with the host's load from one minute to the next, so a
// calibration at start-up would capture one moment (bench/RESULTS.md, issue 40).
//
// How: each call site owns a SpreadRule. Calls are grouped by the base-2 logarithm of their work
// (elements, multiply-adds: the site's unit). For each group the rule keeps an estimate of the
// time per unit of work each way takes: a time below it replaces it, a time above moves it a
// quarter of the way (timing noise only ever adds). It tries each way for kTrials + 1 calls in a
// row and takes the faster from then on, spreading only when that is kSpreadMargin times as fast: a spread call's
// output ends up in two cores' caches, and the calls after it, which its time does not include,
// read it from there (with no margin the tiny copy-task step ran 1-3% slower at 2 threads than at
// 1, with it as fast). Now and then it runs the other way again, so that a change in the host's
// load is followed, and so that trials in a program's first steps, whose fresh pages fault (on a
// Zen 5 VM a relu over 320 KiB of new memory took 800 us, 14 us once the memory was reused), do not
// decide for good:
// - a retry is kRetryBurst calls in a row: the first spread call after calls alone wakes TBB's
//   sleeping workers (40 us on a Zen 5 VM, where the call alone took 1.6 us), the next find them
//   awake, as they would be if the kernel spread call after call. Retried one call at a time, the
//   paper model's Adam step stayed alone, 19% slower than spreading every call;
// - the bursts come after kRetryEvery calls, then twice as many each time, up to kMaxRetryEvery;
// - never less often than every kRetryEvery-th call while the two ways are close, and less often
//   the slower the other way is, so that retrying costs at most kRetryCost of the time.
// - a spread call's time depends on whether TBB's workers are awake: a call right after another
//   spread call (within kAwakeNs, on any thread) finds them spinning, one after calls alone wakes
//   them. The rule keeps the two apart and judges this call as it would run now. So a kernel called
//   back to back (Adam over the parameters) keeps spreading once it has started, and one called
//   between kernels that run alone (the tiny step's) is judged by what waking costs. Running alone
//   is retried only at a call that finds the workers asleep: a burst alone in the middle of a run
//   would let them fall asleep and end the run (the test's model then spread 40% of its calls).
// With one thread allowed nothing is spread or timed.
//
// Except: a call that took kSpreadAlwaysPaysNs or more spread, its first call included, always
// spreads. Its dispatch is a few percent of it at most, and a part no worker picks up is done by
// the calling thread itself (TBB's work stealing), so running it alone could save little; trying
// it alone could cost up to half of it, and a training step of large products sees each size a few
// times a step: the trials alone made the first steps of the paper-size model 1.2-1.6x slower.
//
// Bits: both ways run the same parts, each part on one thread in the same order, so the choice
// never changes a result (tests/test_spread_rule.cpp compares them bit for bit).
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include <tbb/parallel_for.h>

namespace tapegrad {

// How every SpreadRule decides; for tests and benchmarks that compare the ways. Process-wide.
enum class SpreadPolicy {
  kMeasured,      // the default: the faster way as measured (above)
  kAlwaysSpread,  // every partition of more than one part goes to TBB, as before issue 40
  kNeverSpread,   // every partition runs on the calling thread
};
void set_spread_policy(SpreadPolicy policy);
SpreadPolicy spread_policy();

// The threads a partition started here could use: TBB's limit (set_num_threads) within the
// calling thread's arena.
std::size_t threads_available();

class SpreadRule {
 public:
  static constexpr std::uint32_t kTrials = 3;
  static constexpr std::uint32_t kRetryEvery = 32;
  static constexpr std::uint32_t kMaxRetryEvery = 4096;
  static constexpr std::uint32_t kDoublings = 7;  // kRetryEvery << kDoublings == kMaxRetryEvery
  static constexpr std::uint32_t kRetryBurst = 3;
  static constexpr float kRetryCost = 0.01f;
  static constexpr float kSpreadAlwaysPaysNs = 1e6f;
  static constexpr float kSpreadMargin = 1.25f;
  // TBB's workers spin for a while after their last task before they sleep; a spread call this
  // soon after the last one counts as finding them awake. An estimate, not tuned.
  static constexpr std::int64_t kAwakeNs = 50000;

  // Calls between bursts of retries of the slower way when it takes `slowdown` times as long as
  // the faster and was retried in `bursts` bursts since its trials.
  static std::uint32_t retry_interval(float slowdown, std::uint32_t bursts);

  struct Decision {
    bool spread = false;
    bool timed = false;  // whether measured() is to be told how long the call took
  };

  // The way to run a call of `work` units when `threads` threads are allowed and TBB's workers
  // are `awake` (spread_workers_awake).
  Decision decide(std::size_t work, std::size_t threads, bool awake = false);
  // A timed call's duration, decided with `awake`. The first call each way is not counted in the
  // choice between them: it may have started TBB's workers or faulted in pages.
  void measured(std::size_t work, bool spread, std::chrono::nanoseconds took, bool awake = false);

 private:
  struct Way {
    std::atomic<float> ns_per_unit{0};
    std::atomic<std::uint32_t> calls{0};
  };
  static constexpr std::size_t kAlone = 0, kSpreadAsleep = 1, kSpreadAwake = 2;
  struct Group {
    std::array<Way, 3> ways;  // indexed by the three constants above
    std::atomic<std::uint32_t> calls{0};
    std::atomic<std::uint32_t> last_retry{0};
    std::atomic<std::uint32_t> burst_left{0};  // calls left in the current burst of retries
    std::atomic<bool> burst_spreads{false};    // the way the current burst retries
  };
  static std::size_t group_of(std::size_t work);

  std::array<Group, 64> groups_;
};

// Whether a spread call started `now` would find TBB's workers awake (SpreadRule::kAwakeNs), and
// the end of a spread call, which keeps them so.
bool spread_workers_awake(std::chrono::steady_clock::time_point now);
void spread_ended(std::chrono::steady_clock::time_point when);

// Runs serial() or spread() as rule decides, and tells it how long that took. Both must compute
// the same parts in the same way (above). A call that throws is not timed.
template <class Serial, class Spread>
void run_spread(SpreadRule& rule, std::size_t work, Serial&& serial, Spread&& spread) {
  const std::size_t threads = threads_available();
  if (threads <= 1) {
    serial();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const bool awake = spread_workers_awake(start);
  const SpreadRule::Decision way = rule.decide(work, threads, awake);
  way.spread ? spread() : serial();
  if (!way.timed && !way.spread) return;
  const auto end = std::chrono::steady_clock::now();
  if (way.spread) spread_ended(end);
  if (way.timed) rule.measured(work, way.spread, end - start, awake);
}

// fn(i) for every i < count: in order on the calling thread, or as TBB tasks, as rule decides.
template <class Fn>
void spread_indices(SpreadRule& rule, std::size_t work, std::size_t count, const Fn& fn) {
  run_spread(
      rule, work, [&] {
        for (std::size_t i = 0; i < count; ++i) fn(i);
      },
      [&] { tbb::parallel_for(std::size_t{0}, count, fn); });
}

}  // namespace tapegrad
