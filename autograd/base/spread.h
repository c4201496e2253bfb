#pragma once
// Whether a kernel's fixed partition runs on the calling thread or is spread over TBB's workers,
// decided at each call site, per size, from what the two ways measured in this process.
//
// Why measured and not a constant: what a second thread is worth depends on the CPU and on the
// host. The same size rules made the tiny copy-task step 1.28x faster at 2 threads on a Zen 3 VM
// and 1.12-1.20x slower on a Zen 5 VM, where element-wise passes gained nothing at any size; and
// on one VM the second vCPU's worth moves with the host's load from one minute to the next, so a
// calibration at start-up would capture one moment (bench/RESULTS.md, issue 40).
//
// How: each call site owns a SpreadRule. Calls are grouped by the base-2 logarithm of their work
// (elements, multiply-adds: the site's unit), and each group decides on its own:
// - Estimates. Per way, the time per unit of work. A time below the estimate replaces it, a time
//   above moves it a quarter of the way: timing noise only ever adds.
// - Workers awake or asleep. A spread call within kAwakeNs of the last spread call (on any thread)
//   finds TBB's workers spinning; one after calls alone has to wake them (40 us on a Zen 5 VM, for
//   a call that took 1.6 us alone). The two costs are estimated apart, and a call is judged as it
//   would run now. So a kernel called back to back (Adam over the parameters) keeps spreading once
//   it has started, and one called between kernels that run alone (the tiny step's) is judged by
//   what waking costs.
// - Trials. kTrials + 1 calls spread in a row, then as many alone; the first each way is not
//   counted (it may have started the workers or faulted in pages).
// - Choice. The faster way, spreading only when that is kSpreadMargin times as fast: a spread
//   call's output ends up in two cores' caches, which costs the calls after it, outside its time.
// - Retries. Now and then the other way runs again, kRetryBurst calls in a row, so that a change in
//   the host's load is followed and so that spreading is seen with the workers awake. Trials in a
//   program's first steps meet fresh pages (a relu over 320 KiB of new memory took 800 us, 14 us
//   once its memory was reused), so the bursts start often, after kRetryEvery calls, then twice as
//   many each time up to kMaxRetryEvery, and never cost more than kRetryCost of the time. A spread
//   retry is counted as costing kRetrySpreadCostNs more than its own time shows (the output in two
//   cores' caches, the workers woken and left spinning): counted by their own time alone, retries of
//   the tiny step's products, measured near a tie, came every 32 calls and made the step at 2
//   threads 1.03-1.07x its 1-thread time, against 1.00-1.03x this way (bench/RESULTS.md, issue 40).
//   Running alone is retried only at a call that finds the workers asleep: a burst alone in the
//   middle of a run of spread calls would let them fall asleep and end the run.
// - Large calls. A call that took kSpreadAlwaysPaysNs or more spread, its first included, always
//   spreads: its dispatch is a few percent of it at most, and a part no worker picks up is done by
//   the calling thread itself (TBB's work stealing), while a trial alone could cost half of it.
//   Trials of such calls made the paper-size model's first steps 1.2-1.6x slower.
// With one thread allowed nothing is spread or timed. bench/RESULTS.md (issue 40) has the
// measurements behind each point, and what each earlier version of the rule got wrong.
//
// Bits: both ways run the same parts, each part on one thread in the same order, so the choice
// never changes a result (CopyTask.LossesDoNotDependOnHowWorkIsSpread trains under all three
// policies and compares).
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
  // What a spread call costs beyond its own time: about what waking the workers took on a Zen 5 VM.
  static constexpr float kRetrySpreadCostNs = 40000.0f;
  static constexpr float kSpreadAlwaysPaysNs = 1e6f;
  static constexpr float kSpreadMargin = 1.25f;
  // TBB's workers spin for a while after their last task before they sleep; a spread call this
  // soon after the last one counts as finding them awake. An estimate, not tuned.
  static constexpr std::int64_t kAwakeNs = 50000;

  // Calls between bursts of retries of the slower way when it takes `slowdown` times as long as
  // the faster and was retried in `bursts` bursts since its trials; `hidden_cost` is what a retried
  // call costs beyond that, as a multiple of the faster way's time (kRetrySpreadCostNs over it when
  // the slower way spreads, 0 when it runs alone).
  static std::uint32_t retry_interval(float slowdown, std::uint32_t bursts, float hidden_cost = 0.0f);

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
