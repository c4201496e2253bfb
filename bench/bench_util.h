#pragma once
// Shared pieces of the tapegrad_bench program: random inputs, the forward+backward harness, the
// copy-task configurations, and the registration entry points of ops_bench.cpp and
// model_bench.cpp. Workload names are shared with bench/peer/torch_bench.py: run_side_by_side
// pairs rows by name, so a workload renamed here must be renamed there.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "autograd/core/tape.h"
#include "autograd/core/tensor.h"
#include "bench/copy_task_sizes.h"
#include "nn/copy_task/copy_task.h"

namespace tapegrad::bench {

// Normal(0, 1) float tensor from a fixed seed, so every run times the same numbers.
inline Tensor<float> random_tensor(const Shape& shape, std::uint64_t seed, bool requires_grad = true) {
  Generator gen(seed);
  return Tensor<float>::randn(shape, gen, 0.0f, 1.0f, requires_grad);
}

// One forward + backward of f(): records f() on a fresh tape, seeds its output with `seed`, walks
// the tape, then drops the inputs' gradients (as PyTorch's x.grad = None does in the peer script),
// so every call does the same work.
template <class Forward>
void forward_backward_once(std::vector<Tensor<float>>& inputs, const xt::xarray<float>& seed, Forward& f) {
  {
    GradientTape tape;
    const Tensor<float> y = f();
    tape.backward(y, seed);
  }
  for (auto& x : inputs) x.zero_grad();
}

// A fixed random gradient for f()'s output.
template <class Forward>
xt::xarray<float> output_seed(Forward& f) {
  return random_tensor(f().shape(), 99, false).value();
}

// Times forward_backward_once of f().
template <class Forward>
void time_forward_backward(benchmark::State& state, std::vector<Tensor<float>> inputs, Forward f) {
  const xt::xarray<float> seed = output_seed(f);
  for (auto _ : state) forward_backward_once(inputs, seed, f);
}

// Times f() alone; no tape is alive, so nothing is recorded.
template <class Forward>
void time_forward(benchmark::State& state, Forward f) {
  for (auto _ : state) benchmark::DoNotOptimize(f());
}

// Registers a workload. Iteration counts follow wall-clock time; the CPU time reported is the
// whole process's (the kernels run on TBB worker threads too), which on a shared machine is the
// steadier measure of work at one thread.
template <class Fn>
benchmark::internal::Benchmark* add_workload(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))
      ->UseRealTime()
      ->MeasureProcessCPUTime()
      ->Unit(benchmark::kMicrosecond);
}

// Reports flops per iteration as a FLOP/s rate counter.
inline void report_flops(benchmark::State& state, double flops) {
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

void register_op_benchmarks();
void register_model_benchmarks();
void register_study_benchmarks();

// --rss=SIZE mode: builds the copy-task trainer of that size, runs `steps` training steps (each
// through a StepCapture with `capture`) and prints one JSON line with the process's peak resident
// set size at start, after building the trainer, at the end, and over the steps after the first
// three (steady_peak_rss_kib; 0 for 3 steps or fewer), in KiB.
int report_training_rss(const std::string& size, std::size_t steps, bool capture);

}  // namespace tapegrad::bench
