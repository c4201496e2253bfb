// rss_long_run: trains the copy task (default configuration, or --paper; eagerly, or through a
// StepCapture with --capture) for --steps optimiser steps, samples the resident set size (VmRSS)
// every --sample-every steps, prints the table, and fails when memory grows after warm-up: the
// largest sample after --warmup-steps may exceed the largest sample up to it by at most
// --tolerance-mib (the warm-up's peak, not one sample, is the baseline: the allocator moves RSS up
// and down by about a MiB). bench/LONG_RUN.md has the numbers.
//
// Exit status: 0 flat, 3 grew (the output then says "RSS grew"), 1 on an error.
// --retain-per-step BYTES keeps that many more bytes alive after every step (touched, so they are
// resident): the ctest that proves a growing process is caught uses it.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "nn/copy_task/copy_task.h"

namespace {

// VmRSS from /proc/self/status, in KiB.
long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  throw std::runtime_error("no VmRSS line in /proc/self/status");
}

double mib(long kib) { return static_cast<double>(kib) / 1024.0; }

}  // namespace

int main(int argc, char** argv) {
  tapegrad::copy_task::Config config;
  std::size_t steps = 5000, sample_every = 100, warmup_steps = 500, retain_per_step = 0;
  double tolerance_mib = 3.0;
  bool paper = false, capture = false;
  CLI::App app{"Train the copy task for many steps and check that the resident set stays flat"};
  app.add_option("--steps", steps, "optimiser steps")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--sample-every", sample_every, "steps between RSS samples")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup-steps", warmup_steps, "the largest RSS up to this step is the baseline")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--tolerance-mib", tolerance_mib, "allowed growth over the baseline")->capture_default_str();
  app.add_flag("--paper", paper, "the paper-size model: d_model 512, d_ff 2048, 8 heads");
  app.add_flag("--capture", capture, "every step through a StepCapture (copy_task --capture)");
  app.add_option("--retain-per-step", retain_per_step, "bytes kept alive after every step (tests the check)");
  CLI11_PARSE(app, argc, argv);
  if (steps % sample_every != 0 || warmup_steps % sample_every != 0 || warmup_steps >= steps) {
    std::cerr << "rss_long_run: --steps " << steps << " and --warmup-steps " << warmup_steps
              << " must be multiples of --sample-every " << sample_every << ", the warm-up below the steps\n";
    return 1;
  }
  if (paper) {
    config.d_model = 512;
    config.d_ff = 2048;
    config.heads = 8;
  }
  // One "epoch" per sample: the data stream and the schedule depend on the step count only.
  config.batches_per_epoch = sample_every;
  config.epochs = steps / sample_every;
  config.capture_steps = capture;

  try {
    tapegrad::copy_task::Trainer trainer(config);
    std::vector<std::unique_ptr<char[]>> retained;
    std::printf("| step | RSS (MiB) | loss |\n|--:|--:|--:|\n| 0 | %.1f | |\n", mib(resident_kib()));
    long baseline = 0, peak_after = 0;
    std::size_t peak_step = 0;
    for (std::size_t epoch = 0; epoch < config.epochs; ++epoch) {
      const auto stats = trainer.run_epoch([&](std::size_t, double) {
        if (retain_per_step == 0) return;
        retained.push_back(std::make_unique<char[]>(retain_per_step));
        std::memset(retained.back().get(), 1, retain_per_step);
      });
      const long rss = resident_kib();
      std::printf("| %zu | %.1f | %.4f |\n", stats.steps, mib(rss), stats.loss);
      std::fflush(stdout);
      if (stats.steps <= warmup_steps && rss > baseline) baseline = rss;
      if (stats.steps > warmup_steps && rss > peak_after) {
        peak_after = rss;
        peak_step = stats.steps;
      }
    }
    if (const auto captured = trainer.capture_stats()) {
      std::printf("Step capture: %zu steps recorded, %zu replayed, %zu diverged, arena %.1f MiB\n",
                  captured->recorded_steps, captured->replayed_steps, captured->diverged_steps,
                  static_cast<double>(captured->arena_bytes) / (1 << 20));
    }
    const double growth = mib(peak_after - baseline);
    if (growth > tolerance_mib) {
      std::printf("RSS grew by %.1f MiB after warm-up: at most %.1f MiB up to step %zu, %.1f MiB at step %zu "
                  "(tolerance %.1f MiB)\n",
                  growth, mib(baseline), warmup_steps, mib(peak_after), peak_step, tolerance_mib);
      return 3;
    }
    std::printf("RSS flat after warm-up: at most %.1f MiB up to step %zu, at most %.1f MiB after (%+.1f MiB, "
                "tolerance %.1f MiB)\n",
                mib(baseline), warmup_steps, mib(peak_after), growth, tolerance_mib);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rss_long_run: %s\n", e.what());
    return 1;
  }
  return 0;
}
