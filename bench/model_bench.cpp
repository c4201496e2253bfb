// Model-level workloads: labml attention forward+backward, an Adam step over the paper-size
// Transformer, and whole copy-task training steps; plus the peak-RSS mode.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <limits>
#include <optional>

#include "autograd/kernels/parallel.h"
#include "autograd/base/matmul_precision.h"
#include "autograd/ops/all.h"
#include "bench/bench_util.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/transformer/multi_head_attention.h"

namespace tapegrad::bench {

namespace {

// The process's peak resident set since it started or since reset_peak_rss(): VmHWM, which
// (unlike getrusage's ru_maxrss) the kernel lets a process reset.
long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));  // "VmHWM:   123456 kB"
  }
  throw std::runtime_error("tapegrad_bench: no VmHWM in /proc/self/status");
}

void reset_peak_rss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";  // resets VmHWM to the current RSS (proc(5))
  if (!clear_refs.flush()) throw std::runtime_error("tapegrad_bench: cannot reset the peak RSS (/proc/self/clear_refs)");
}

// labml MultiHeadAttention(8 heads, d_model 512, no dropout) on x [10, 80, 512] with a causal
// [10, 10, 1] mask; gradients into x and every parameter.
void register_labml_attention() {
  add_workload("labml_mha/s10_b80_d512_h8", [](benchmark::State& state) {
    Generator gen(1);
    nn::labml::MultiHeadAttention<float> mha(8, 512, gen, /*dropout_prob=*/0.0);
    const Tensor<float> x = random_tensor({10, 80, 512}, 2);
    Mask allowed = Mask::from_shape({10, 10, 1});
    for (std::size_t i = 0; i < 10; ++i)
      for (std::size_t j = 0; j < 10; ++j) allowed(i, j, 0) = j <= i;
    const AttendMask causal(std::move(allowed));
    std::vector<Tensor<float>> inputs = mha.parameters();
    inputs.push_back(x);
    time_forward_backward(state, inputs, [&] { return mha(x, x, x, causal); });
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 10 * 80));  // tokens
  });
}

// The copy-task Transformer's MultiHeadAttention at the tiny training step's size (d_model 64, 4
// heads, batch 32, 10 tokens) under a look-ahead mask: the sublayer whose ops are the step's
// smallest; gradients into x and every parameter.
void register_transformer_attention() {
  add_workload("transformer_mha/tiny", [](benchmark::State& state) {
    Generator gen(1);
    nn::transformer::MultiHeadAttention<float> mha(64, 4, gen);
    const Tensor<float> x = random_tensor({32, 10, 64}, 2);
    Mask allowed = Mask::from_shape({1, 10, 10});
    for (std::size_t i = 0; i < 10; ++i)
      for (std::size_t j = 0; j < 10; ++j) allowed(0, i, j) = j <= i;
    const AttendMask look_ahead(std::move(allowed));
    std::vector<Tensor<float>> inputs = mha.parameters();
    inputs.push_back(x);
    time_forward_backward(state, inputs, [&] { return mha(x, x, x, look_ahead); });
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 32 * 10));  // tokens
  });
}

// The attention core of labml's module, as the target defines it (seq 10, batch 80,
// 8 heads, d_k 64): einsum scores, scale, causal mask, softmax over keys, einsum with the values;
// gradients into q, k and v.
void register_labml_attention_core() {
  add_workload("labml_attention/s10_b80_h8_d64", [](benchmark::State& state) {
    const Tensor<float> q = random_tensor({10, 80, 8, 64}, 3), k = random_tensor({10, 80, 8, 64}, 4),
                        v = random_tensor({10, 80, 8, 64}, 5);
    Mask masked_out = Mask::from_shape({10, 10, 1, 1});  // true = fill (j > i)
    for (std::size_t i = 0; i < 10; ++i)
      for (std::size_t j = 0; j < 10; ++j) masked_out(i, j, 0, 0) = j > i;
    time_forward_backward(state, {q, k, v}, [&] {
      const Tensor<float> scores = einsum("ibhd,jbhd->ijbh", q, k) * (1.0f / 8.0f);
      const Tensor<float> attn = softmax(masked_fill(scores, masked_out, -std::numeric_limits<float>::infinity()), 1);
      return einsum("ijbh,jbhd->ibhd", attn, v);
    });
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 10 * 80));  // tokens
  });
}

// One Adam step over the paper-size copy-task model, every parameter holding a gradient.
void register_adam_step() {
  add_workload("adam_step/paper", [](benchmark::State& state) {
    Generator gen(1);
    nn::transformer::Transformer<float> model(11, 11, 10, 0, 512, 2, 2048, 8, 0.1, 1e-5, gen);
    std::size_t count = 0;
    for (const Tensor<float>& p : model.parameters()) {
      p.node()->grad = random_tensor(p.shape(), 3 + count, false).value();
      count += p.numel();
    }
    optim::Adam<float> adam(model.named_parameters(), {.lr = 1e-4, .betas = {0.9, 0.98}, .eps = 1e-9});
    adam.step();  // warm-up: the first step allocates the moment buffers
    for (auto _ : state) adam.step();
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * count));  // parameters
  });
}

// forward, loss, backward, Adam step, zero_grad and the Noam schedule: Trainer::run_epoch with
// one batch per epoch, fresh random data each step as in the copy_task program. In bf16 the
// products take bf16 inputs (copy_task --bf16), the row named train_step/SIZE_bf16.
// With capture, each step runs through a StepCapture (copy_task --capture), the row named
// train_step/SIZE_captured: the warm-up steps record, the timed ones replay.
void register_training_step(const std::string& size, MatmulPrecision precision, bool capture = false) {
  const bool bf16 = precision == MatmulPrecision::kBfloat16;
  const std::string name = "train_step/" + size + (bf16 ? "_bf16" : "") + (capture ? "_captured" : "");
  add_workload(name, [size, precision, capture](benchmark::State& state) {
    copy_task::Config config = copy_task_config(size);
    config.matmul_precision = precision;
    config.capture_steps = capture;
    copy_task::Trainer trainer(config);
    trainer.run_epoch();  // warm-up: the first step also allocates Adam's buffers
    // Captured, step 1 records, step 2 (the first replay) meets Adam's buffers made and diverges,
    // step 3 records again: warm up until a step has replayed, so that every timed step replays.
    const auto replayed = [&] {
      const std::optional<StepCaptureStats> stats = trainer.capture_stats();
      return !stats || stats->replayed_steps > 0 || stats->gave_up;
    };
    while (!replayed()) trainer.run_epoch();
    for (auto _ : state) trainer.run_epoch();
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * config.batch * (config.seq_len - 1)));
  });
}

}  // namespace

void register_model_benchmarks() {
  register_labml_attention();
  register_labml_attention_core();
  register_transformer_attention();
  register_adam_step();
  for (const MatmulPrecision precision : {MatmulPrecision::kFloat32, MatmulPrecision::kBfloat16}) {
    register_training_step("tiny", precision);
    register_training_step("paper", precision);
  }
  register_training_step("tiny", MatmulPrecision::kFloat32, /*capture=*/true);
  register_training_step("paper", MatmulPrecision::kFloat32, /*capture=*/true);
}

int report_training_rss(const std::string& size, std::size_t steps, bool capture) {
  const long baseline = peak_rss_kib();
  copy_task::Config config = copy_task_config(size);
  config.capture_steps = capture;
  copy_task::Trainer trainer(config);
  const long after_init = peak_rss_kib();
  // The steady state: the peak over the steps after the first three. A captured run records the
  // first step, meets Adam's buffers made in the second (which diverges), records the third.
  constexpr std::size_t kWarmUpSteps = 3;
  long warm_up_peak = 0, steady_peak = 0;
  for (std::size_t i = 0; i < steps; ++i) {
    if (i == kWarmUpSteps) {
      warm_up_peak = peak_rss_kib();
      reset_peak_rss();
    }
    trainer.run_epoch();
  }
  if (steps > kWarmUpSteps) steady_peak = peak_rss_kib();
  std::printf("{\"workload\": \"train_step/%s%s\", \"threads\": %zu, \"steps\": %zu, \"baseline_rss_kib\": %ld, "
              "\"after_init_rss_kib\": %ld, \"peak_rss_kib\": %ld, \"steady_peak_rss_kib\": %ld}\n",
              size.c_str(), capture ? "_captured" : "", num_threads(), steps, baseline, after_init,
              std::max(warm_up_peak, peak_rss_kib()), steady_peak);
  if (const auto stats = trainer.capture_stats()) {
    std::fprintf(stderr, "capture: arena %zu KiB, %zu arrays a step planned in it; %zu steps recorded, %zu replayed, %zu diverged; "
                 "replays served %zu arrays from the arena, %zu from the heap\n", stats->arena_bytes / 1024,
                 stats->planned_blocks, stats->recorded_steps, stats->replayed_steps, stats->diverged_steps,
                 stats->arena_allocations, stats->heap_allocations);
  }
  return 0;
}

}  // namespace tapegrad::bench
