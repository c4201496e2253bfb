// tapegrad_distributed_bench: the data-parallel copy-task training step, timed.
//
//   tapegrad_distributed_bench [--size=tiny|paper] [--threads=N] [--steps=S] [--warmup=W] [--no-overlap]
//   mpirun -np 2 tapegrad_distributed_bench --threads=1 ...
//
// Each rank trains on its rows of every batch (copy_task::Trainer with DataParallel), its
// gradients summed by GradientAllreducer; alone (no mpirun) it is the plain single-process step.
// After W warm-up steps, S steps are timed one by one, and so is the reducer's wait() inside each.
// --no-overlap starts every bucket in wait() instead of during the backward walk
// (AllreducerOptions::start_during_backward), the baseline of the overlap measure:
//   hidden fraction = (step without overlap - step with overlap) / wait() without overlap,
// since without overlap wait() holds all the communication. Rank 0 prints one JSON line with
// the medians. A fixed step count, not Google Benchmark's adaptive one: every rank must run the
// same number of steps, or the collectives would not match. bench/run_distributed runs the
// configurations side by side.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/kernels/parallel.h"
#include "bench/copy_task_sizes.h"
#include "distributed/allreducer.h"
#include "distributed/parameters.h"

namespace tapegrad::bench {
namespace {

struct Options {
  std::string size = "paper";
  std::size_t threads = 1, steps = 8, warmup = 2;
  bool overlap = true;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&](std::string_view prefix) { return std::string(arg.substr(prefix.size())); };
    if (arg.starts_with("--size=")) options.size = value("--size=");
    else if (arg.starts_with("--threads=")) options.threads = std::stoul(value("--threads="));
    else if (arg.starts_with("--steps=")) options.steps = std::stoul(value("--steps="));
    else if (arg.starts_with("--warmup=")) options.warmup = std::stoul(value("--warmup="));
    else if (arg == "--no-overlap") options.overlap = false;
    else throw ValueError("tapegrad_distributed_bench: unknown argument " + std::string(arg));
  }
  if (options.steps == 0) throw ValueError("tapegrad_distributed_bench: --steps must be at least 1");
  return options;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

int run(const Options& options, distributed::Context& ctx) {
  set_num_threads(options.threads);
  copy_task::Trainer trainer(copy_task_config(options.size));
  const std::size_t ranks = static_cast<std::size_t>(ctx.size());
  std::unique_ptr<distributed::GradientAllreducer<float>> reducer;
  double wait_ms = 0;
  if (ranks > 1) {
    distributed::broadcast_parameters(ctx, trainer.model());
    reducer = std::make_unique<distributed::GradientAllreducer<float>>(
        ctx, trainer.model().named_parameters(), distributed::AllreducerOptions{.start_during_backward = options.overlap});
    trainer.set_data_parallel({.rank = static_cast<std::size_t>(ctx.rank()), .ranks = ranks,
                               .sum_over_ranks = [&](double x) { return distributed::global_sum(ctx, x); },
                               .reduce_gradients = [&] {
                                 const auto start = Clock::now();
                                 reducer->wait();
                                 wait_ms = ms_since(start);
                               }});
  }
  for (std::size_t i = 0; i < options.warmup; ++i) trainer.run_epoch();
  std::vector<double> step_ms, waits_ms;
  for (std::size_t i = 0; i < options.steps; ++i) {
    const auto start = Clock::now();
    trainer.run_epoch();
    step_ms.push_back(ms_since(start));
    waits_ms.push_back(wait_ms);
  }
  if (ctx.rank() == 0) {
    std::printf("{\"size\": \"%s\", \"ranks\": %zu, \"threads\": %zu, \"overlap\": %s, \"buckets\": %zu, "
                "\"warmup_steps\": %zu, \"steps\": %zu, \"step_ms\": %.3f, \"wait_ms\": %.3f}\n",
                options.size.c_str(), ranks, num_threads(), options.overlap ? "true" : "false",
                reducer ? reducer->bucket_count() : std::size_t{0}, options.warmup, options.steps, median(step_ms),
                median(waits_ms));
  }
  return 0;
}

}  // namespace
}  // namespace tapegrad::bench

int main(int argc, char** argv) {
  tapegrad::distributed::Context ctx(argc, argv);
  try {
    return tapegrad::bench::run(tapegrad::bench::parse(argc, argv), ctx);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    ctx.abort(2);
  }
}
