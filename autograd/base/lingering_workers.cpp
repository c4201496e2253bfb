#include "autograd/base/lingering_workers.h"

#include <atomic>
#include <chrono>

#include <tbb/task_arena.h>
#include <tbb/task_scheduler_observer.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tapegrad::detail {

namespace {

// Incremented as every spread call starts: a lingering task spins while it is unchanged.
std::atomic<std::uint64_t> spread_calls_started{0};
std::atomic<std::size_t> lingering{0};  // tasks enqueued and not finished
std::atomic<std::size_t> spinning{0};   // of those, the ones a worker is running
std::atomic<std::uint64_t> started_spinning{0};

thread_local bool tbb_worker = false;

// Marks TBB's worker threads as they enter the scheduler: a thread not marked never lingers. It
// observes from the program's start, before any worker exists: TBB does not tell an observer made
// later about the workers already running. It is never destroyed: TBB frees an observer's
// registration lazily, so one destroyed at exit left it unreachable (LeakSanitizer reported it).
class WorkerMarker : public tbb::task_scheduler_observer {
 public:
  WorkerMarker() { observe(true); }
  void on_scheduler_entry(bool is_worker) override { tbb_worker = is_worker; }
};
[[maybe_unused]] WorkerMarker* const worker_marker = new WorkerMarker;

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

void linger(std::uint64_t started) {
  if (tbb_worker) {
    spinning.fetch_add(1, std::memory_order_relaxed);
    started_spinning.fetch_add(1, std::memory_order_relaxed);
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(kLingerNs);
    while (spread_calls_started.load(std::memory_order_relaxed) == started && std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 16; ++i) pause();  // a clock read costs more than the pauses between
    }
    spinning.fetch_sub(1, std::memory_order_relaxed);
  }
  lingering.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

void stop_lingering() { spread_calls_started.fetch_add(1, std::memory_order_relaxed); }

void linger_workers(std::size_t threads) {
  const std::uint64_t started = spread_calls_started.load(std::memory_order_relaxed);
  std::size_t now = lingering.load(std::memory_order_relaxed);
  while (now + 1 < threads) {
    if (!lingering.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) continue;
    tbb::this_task_arena::enqueue([started] { linger(started); });
    ++now;
  }
}

std::size_t spinning_workers() { return spinning.load(std::memory_order_relaxed); }

std::uint64_t lingers_so_far() { return started_spinning.load(std::memory_order_relaxed); }

}  // namespace tapegrad::detail
