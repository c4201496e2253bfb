// Model-level workloads: labml attention forward+backward, an Adam step over the paper-size
// Transformer, and whole copy-task training steps; plus the peak-RSS mode.
#include <sys/resource.h>

#include <cstdio>
#include <limits>

#include "autograd/kernels/parallel.h"
#include "autograd/matmul_precision.h"
#include "autograd/ops.h"
#include "bench/bench_util.h"
#include "nn/labml/multi_head_attention.h"

namespace tapegrad::bench {

namespace {

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
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

// The attention core of the same module, as the target defines it (seq 10, batch 80,
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
void register_training_step(const std::string& size, MatmulPrecision precision) {
  const bool bf16 = precision == MatmulPrecision::kBfloat16;
  add_workload("train_step/" + size + (bf16 ? "_bf16" : ""), [size, precision](benchmark::State& state) {
    copy_task::Config config = copy_task_config(size);
    config.matmul_precision = precision;
    copy_task::Trainer trainer(config);
    trainer.run_epoch();  // warm-up: the first step also allocates Adam's buffers
    for (auto _ : state) trainer.run_epoch();
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * config.batch * (config.seq_len - 1)));
  });
}

}  // namespace

void register_model_benchmarks() {
  register_labml_attention();
  register_labml_attention_core();
  register_adam_step();
  for (const MatmulPrecision precision : {MatmulPrecision::kFloat32, MatmulPrecision::kBfloat16}) {
    register_training_step("tiny", precision);
    register_training_step("paper", precision);
  }
}

int report_training_rss(const std::string& size, std::size_t steps) {
  const long baseline = peak_rss_kib();
  copy_task::Trainer trainer(copy_task_config(size));
  const long after_init = peak_rss_kib();
  for (std::size_t i = 0; i < steps; ++i) trainer.run_epoch();
  std::printf("{\"workload\": \"train_step/%s\", \"threads\": %zu, \"steps\": %zu, \"baseline_rss_kib\": %ld, "
              "\"after_init_rss_kib\": %ld, \"peak_rss_kib\": %ld}\n",
              size.c_str(), num_threads(), steps, baseline, after_init, peak_rss_kib());
  return 0;
}

}  // namespace tapegrad::bench
