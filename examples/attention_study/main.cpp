// attention_study: how attention and its gradient look in a copy-task Transformer.
// Trains a small copy-task model (or loads one with --checkpoint), runs one batch of a few
// sequences under a GradientTape, backward from the loss, and writes into --out a page
// (index.html) of the attention maps and dL/dA per layer, head and sequence, the gradient norms
// per head and per sublayer, and the training loss curve. See report.h for the files.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "autograd/kernels/parallel.h"
#include "examples/attention_study/report.h"
#include "examples/attention_study/study.h"
#include "examples/copy_task/copy_task.h"

namespace {

constexpr std::size_t kAccuracySequences = 100;
// The study sequences come from their own stream, so they are the same whether the model was
// trained here or loaded.
constexpr std::uint64_t kStudyStream = 0x5EED5EED;

}  // namespace

int main(int argc, char** argv) {
  using namespace tapegrad;
  copy_task::Config config;
  config.batch = 32;
  config.warmup = 100;
  config.epochs = 1;
  std::size_t steps = 300, sequences = 3, threads = 0;
  int cell = 32;
  std::string checkpoint, save_checkpoint, out = "attention_study_out";
  CLI::App app{"Draw the attention maps of a copy-task Transformer and the gradient of the loss with respect to them"};
  auto* load_option =
      app.add_option("--checkpoint", checkpoint,
                     "load this copy-task checkpoint (copy_task --checkpoint, same size flags) instead of training");
  app.add_option("--out", out, "output directory")->capture_default_str();
  app.add_option("--steps", steps, "training steps when not loading a checkpoint")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--save-checkpoint", save_checkpoint, "save the trained model's checkpoint here")
      ->excludes(load_option);
  app.add_option("--sequences", sequences, "sequences in the studied batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  app.add_option("--seq-len", config.seq_len, "tokens per sequence, start symbol included")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  app.add_option("--d-model", config.d_model, "model width")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--d-ff", config.d_ff, "feed-forward width")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--heads", config.heads, "attention heads")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--layers", config.layers, "encoder and decoder layers (N)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", config.batch, "sequences per training batch")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", config.warmup, "Noam warm-up steps")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seed", config.seed, "seed of initialisation, training data and the studied sequences")
      ->capture_default_str();
  app.add_option("--cell", cell, "heatmap pixels per (query, key) cell")
      ->capture_default_str()
      ->check(CLI::Range(8, 64));
  app.add_option("--threads", threads, "worker threads (0 = all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (config.d_model % config.heads != 0) {
    std::cerr << "attention_study: --d-model " << config.d_model << " must be divisible by --heads " << config.heads
              << "\n";
    return 2;
  }
  config.batches_per_epoch = steps;  // one epoch = the whole training run
  set_num_threads(threads);

  try {
    copy_task::Trainer trainer(config);
    attention_study::RunInfo run;
    run.config = config;
    run.cell = cell;
    if (!checkpoint.empty()) {
      trainer.load(checkpoint);
      run.source = "loaded from " + checkpoint + " at step " + std::to_string(trainer.steps());
    } else {
      std::printf("Training a copy-task model: N=%zu d_model=%zu d_ff=%zu heads=%zu, %zu steps of %zu sequences\n",
                  config.layers, config.d_model, config.d_ff, config.heads, steps, config.batch);
      const std::size_t every = std::max<std::size_t>(1, steps / 10);
      trainer.run_epoch([&](std::size_t step, double loss) {
        run.losses.push_back(loss);
        if (step % every == 0 || step == steps) std::printf("  step %5zu  loss %.4f\n", step, loss);
      });
      run.source = "trained here for " + std::to_string(steps) + " steps (seed " + std::to_string(config.seed) + ")";
      if (!save_checkpoint.empty()) trainer.save(save_checkpoint);
    }
    run.steps = trainer.steps();
    run.accuracy = trainer.exact_match_accuracy(kAccuracySequences);
    run.accuracy_sequences = kAccuracySequences;

    Generator study_gen(config.seed ^ kStudyStream);
    const IndexArray data = copy_task::random_sequences(sequences, config.seq_len, config.vocab, study_gen);
    const attention_study::StudyResult study = attention_study::study_batch(trainer.model(), data);
    attention_study::write_report(out, run, study);
    std::printf("Model: %s; exact-match accuracy %.0f%%. Study batch loss %.4f.\nWrote %s\n", run.source.c_str(),
                100.0 * run.accuracy, study.loss, (std::filesystem::path(out) / "index.html").c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attention_study: %s\n", e.what());
    return 1;
  }
  return 0;
}
