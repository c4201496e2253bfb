// The patching study's workloads on the default copy-task model (d_model 32, d_ff 64, 4 heads,
// N = 2, seq 10) and a study batch of 32 sequences: the unit (one forward and backward of the
// copy metric), attribution patching of every head from the clean and corrupted forwards (AtP,
// AtP* = QK fix + GradDrop, the second-order term), and exact sweeps over every head, one forward
// per head and batched; and every edge (a head, feed-forward or embedding into an attention
// input or the output) by EAP and by exact path patching. Issue "[3 of 4]" sets AtP and EAP at
// three units or less and the exact sweep over heads at 0.1 s or less.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops/all.h"
#include "bench/bench_util.h"
#include "study/attention_sites.h"
#include "study/attribution_patching.h"
#include "study/batched_patching.h"
#include "study/edge_patching.h"
#include "study/metrics.h"

namespace tapegrad::bench {

namespace {

struct CopyCircuit {
  copy_task::Config config;
  Generator gen{1};
  std::unique_ptr<nn::transformer::Transformer<float>> model = copy_task::make_model<float>(config, gen);
  Generator data_gen{2};
  std::size_t sequences;
  IndexArray data = copy_task::random_sequences(sequences, config.seq_len, config.vocab, data_gen);
  copy_task::Batch clean = copy_task::make_batch(data);
  IndexArray corrupted_data = copy_task::corrupt_sequences(data, config.vocab, data_gen);
  copy_task::Batch corrupted = copy_task::make_batch(corrupted_data);
  std::vector<std::string> z_points, qkz_points;

  explicit CopyCircuit(std::size_t study_sequences = 32) : sequences(study_sequences) {
    model->eval();
    for (const auto& [module, attention] : study::named_attention_modules(*model)) {
      z_points.push_back(module + ".hook_z");
      for (const char* point : {".hook_z", ".hook_q", ".hook_k"}) qkz_points.push_back(module + point);
    }
  }
  // The corrupted batch stacked `replicas` times, each copy's metric.
  Tensor<float> run_replicated(std::size_t replicas) {
    const copy_task::Batch stacked = copy_task::make_batch(study::stacked_copies(corrupted_data, replicas));
    const IndexArray correct = study::stacked_copies(clean.tgt_out, replicas),
                     wrong = study::stacked_copies(corrupted.tgt_out, replicas);
    const Tensor<float> out = (*model)(stacked.src, stacked.tgt_in, stacked.src_mask, stacked.tgt_mask);
    return study::score_difference_per_replica(model->generator(out), correct, wrong, replicas);
  }
  study::RunLoss<float> run(const copy_task::Batch& batch) {
    return [this, &batch] {
      const Tensor<float> out = (*model)(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask);
      return study::score_difference(model->generator(out), clean.tgt_out, corrupted.tgt_out);
    };
  }
};

// AtP with the options made for the model on every head's z (and q and k with qkz), the clean
// forward included (it is part of the method).
void time_attribution(benchmark::State& state, bool qkz,
                      const std::function<study::AttributionOptions(nn::Module<float>&)>& options_for) {
  CopyCircuit c;
  const auto& points = qkz ? c.qkz_points : c.z_points;
  const study::AttributionOptions options = options_for(*c.model);
  for (auto _ : state) {
    const auto clean = study::run_with_cache(*c.model, c.run(c.clean), points);
    benchmark::DoNotOptimize(study::attribution_patch(*c.model, c.run(c.corrupted), clean, points, 1, options));
  }
}

}  // namespace

void register_study_benchmarks() {
  add_workload("study/forward_backward", [](benchmark::State& state) {
    CopyCircuit c;
    for (auto _ : state) {
      GradientTape tape;
      benchmark::DoNotOptimize(tape.gradient(c.run(c.corrupted)(), c.model->parameters()));
    }
  });
  const auto plain = [](nn::Module<float>&) { return study::AttributionOptions{}; };
  add_workload("study/atp_every_head_z", [=](benchmark::State& state) { time_attribution(state, false, plain); });
  add_workload("study/atp_every_head_qkz", [=](benchmark::State& state) { time_attribution(state, true, plain); });
  add_workload("study/atp_star_every_head_qkz", [](benchmark::State& state) {
    time_attribution(state, true, [](nn::Module<float>& model) {
      return study::AttributionOptions{.qk_fix = true, .grad_drop_layers = study::layer_output_points(model)};
    });
  });
  add_workload("study/atp_second_order_every_head_z", [](benchmark::State& state) {
    time_attribution(state, false, [](nn::Module<float>&) { return study::AttributionOptions{.second_order = true}; });
  });
  // Every edge, heads as senders (edge_circuit.h's graph): EAP with the clean forward included,
  // and exact path patching from a cached clean run.
  add_workload("study/eap_every_edge", [](benchmark::State& state) {
    CopyCircuit c;
    const auto senders = study::edge_senders(*c.model, true);
    const auto receivers = study::edge_receivers(*c.model, /*heads=*/false);
    const auto points = study::edge_points(senders, receivers);
    for (auto _ : state) {
      const auto clean = study::run_with_cache(*c.model, c.run(c.clean), points);
      benchmark::DoNotOptimize(study::attribute_edges(*c.model, c.run(c.corrupted), clean, senders, receivers));
    }
  });
  add_workload("study/exact_every_edge", [](benchmark::State& state) {
    CopyCircuit c;
    const auto senders = study::edge_senders(*c.model, true);
    const auto receivers = study::edge_receivers(*c.model, /*heads=*/false);
    const auto clean = study::run_with_cache(*c.model, c.run(c.clean), study::edge_points(senders, receivers));
    const auto edges = study::edges_of(study::attribute_edges(*c.model, c.run(c.corrupted), clean, senders, receivers));
    state.counters["edges"] = double(edges.size());
    for (auto _ : state) benchmark::DoNotOptimize(study::patch_edges(*c.model, c.run(c.corrupted), clean, senders, edges));
  });
  // The exact sweeps at 32 sequences and at attention_study's default of 3, where per-op work
  // weighs more and one forward per 24 slices saves more.
  for (const std::size_t sequences : {32, 3}) {
    const std::string suffix = "/b" + std::to_string(sequences);
    add_workload("study/exact_sweep_every_head_z" + suffix, [=](benchmark::State& state) {
      CopyCircuit c(sequences);
      const auto clean = study::run_with_cache(*c.model, c.run(c.clean), c.z_points);
      for (auto _ : state) benchmark::DoNotOptimize(study::patch_slices(*c.model, c.run(c.corrupted), clean, c.z_points, 1));
    });
    add_workload("study/exact_sweep_every_head_z_batched" + suffix, [=](benchmark::State& state) {
      CopyCircuit c(sequences);
      const auto clean = study::run_with_cache(*c.model, c.run(c.clean), c.z_points);
      const study::ReplicatedRun<float> run = [&](std::size_t replicas) { return c.run_replicated(replicas); };
      for (auto _ : state) benchmark::DoNotOptimize(study::patch_slices_batched(*c.model, run, clean, c.z_points, 1));
    });
  }
}

}  // namespace tapegrad::bench
