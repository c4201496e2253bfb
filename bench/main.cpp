// tapegrad_bench: every workload of bench/, as Google Benchmark runs them, plus a peak-RSS mode.
//
//   tapegrad_bench [--threads=N] [--openblas-only] [--spread=measured|always|never] [Google Benchmark flags]
//                  e.g. --benchmark_filter=softmax
//   tapegrad_bench [--threads=N] --rss=tiny|paper [--rss-steps=S] [--rss-capture]
//
// Threads: --threads=N, else the TAPEGRAD_BENCH_THREADS environment variable, else all cores
// (0). The count goes to tapegrad::set_num_threads and into the JSON context as "tapegrad_threads".
// --openblas-only: every float product to OpenBLAS, none to oneDNN (autograd/kernels/gemm/gemm_backend.h),
// to hold a build with oneDNN against itself without it; the JSON context says "gemm_backends".
// --spread: how kernels decide to spread their parts over threads (autograd/base/spread.h):
// measured (the default), always (as before issue 40) or never; the JSON context says "spread".
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/base/spread.h"
#include "autograd/kernels/gemm/gemm_backend.h"
#include "autograd/kernels/parallel.h"
#include "bench/bench_util.h"

namespace {

struct Options {
  std::size_t threads = 0;
  std::optional<std::string> rss_size;
  std::size_t rss_steps = 5;
  bool rss_capture = false;  // each step through a StepCapture
  bool openblas_only = false;
  tapegrad::SpreadPolicy spread = tapegrad::SpreadPolicy::kMeasured;
};

tapegrad::SpreadPolicy spread_policy_named(const std::string& name) {
  if (name == "measured") return tapegrad::SpreadPolicy::kMeasured;
  if (name == "always") return tapegrad::SpreadPolicy::kAlwaysSpread;
  if (name == "never") return tapegrad::SpreadPolicy::kNeverSpread;
  throw std::invalid_argument("--spread=" + name + " (measured, always or never)");
}

// Takes this program's flags out of argv (leaving Google Benchmark's); throws on a bad value.
Options take_own_flags(int& argc, char** argv) {
  Options options;
  if (const char* env = std::getenv("TAPEGRAD_BENCH_THREADS")) options.threads = std::stoul(env);
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&](std::string_view flag) { return std::string(arg.substr(flag.size())); };
    if (arg.starts_with("--threads=")) {
      options.threads = std::stoul(value("--threads="));
    } else if (arg.starts_with("--rss=")) {
      options.rss_size = value("--rss=");
    } else if (arg == "--rss-capture") {
      options.rss_capture = true;
    } else if (arg.starts_with("--rss-steps=")) {
      options.rss_steps = std::stoul(value("--rss-steps="));
    } else if (arg.starts_with("--spread=")) {
      options.spread = spread_policy_named(value("--spread="));
    } else if (arg == "--openblas-only") {
      options.openblas_only = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = take_own_flags(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tapegrad_bench: bad --threads, --rss-steps, --spread or TAPEGRAD_BENCH_THREADS value (" << e.what() << ")\n";
    return 2;
  }
  tapegrad::set_num_threads(options.threads);
  tapegrad::set_spread_policy(options.spread);
  std::optional<tapegrad::kernels::GemmBackendGuard> openblas_only;
  if (options.openblas_only) openblas_only.emplace(tapegrad::kernels::GemmBackend::kOpenBlas);
  if (options.rss_size) {
    try {
      return tapegrad::bench::report_training_rss(*options.rss_size, options.rss_steps, options.rss_capture);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 2;
    }
  }
  benchmark::AddCustomContext("tapegrad_threads", std::to_string(tapegrad::num_threads()));
  benchmark::AddCustomContext("spread", options.spread == tapegrad::SpreadPolicy::kMeasured       ? "measured"
                                       : options.spread == tapegrad::SpreadPolicy::kAlwaysSpread ? "always"
                                                                                                 : "never");
  benchmark::AddCustomContext("gemm_backends", options.openblas_only || !tapegrad::kernels::onednn_available()
                                                   ? "openblas"
                                                   : "openblas+onednn");
  tapegrad::bench::register_op_benchmarks();
  tapegrad::bench::register_model_benchmarks();
  tapegrad::bench::register_study_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
