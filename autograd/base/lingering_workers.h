#pragma once
// TBB's workers kept awake between spread calls (base/spread.h's run_spread calls both functions).
//
// Why: a TBB worker with nothing to do falls asleep within tens of microseconds, and waking one
// costs 40-85 us on a VM (a vCPU the host has descheduled): more than most kernels of a small
// model take, so spreading them never paid. Two 85 us tasks after 100 us of serial work ran no
// faster side by side than one after the other; with the workers lingering they ran in 0.57 of the
// time (bench/RESULTS.md, issue 40).
//
// How: when a call ends (spread, or alone at a kernel that would gain from spreading with the
// workers awake: SpreadRule::Decision::keep_awake), each worker it may use gets a task that spins
// (with pause instructions) until the next spread call starts, which it then joins at once, or
// until kLingerNs pass without one. So a program that calls such kernels at least once in every
// kLingerNs keeps its other cores busy spinning, as OpenMP's active wait does; one that stops
// frees them within kLingerNs. Only TBB's worker threads linger: a thread of the program waiting
// for its own TBB work that picks up such a task returns from it at once.
#include <cstddef>
#include <cstdint>

namespace tapegrad::detail {

inline constexpr std::int64_t kLingerNs = 500'000;

// A spread call is starting: lingering workers stop spinning and take its tasks.
void stop_lingering();

// A call ended that may use `threads` threads: up to threads - 1 workers linger.
void linger_workers(std::size_t threads);

// Workers spinning now: a spread call finds that many awake.
std::size_t spinning_workers();

// How many times a worker has started to linger in this process (for tests: a linger of 500 us
// is easily missed by a look at spinning_workers on a loaded host).
std::uint64_t lingers_so_far();

}  // namespace tapegrad::detail
