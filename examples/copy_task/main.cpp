// copy_task: trains an encoder-decoder Transformer on The Annotated Transformer's copy task and
// prints its progress like the notebook, then greedy decodes and the exact-match accuracy.
// --checkpoint PATH saves the training state to PATH after every epoch (atomically) and, when
// PATH exists at start, resumes from it. --distributed (a build with MPI) trains data-parallel as
// one rank of `mpirun -np N`: every rank its share of each batch, rank 0 printing and saving.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "autograd/kernels/parallel.h"
#include "examples/cli/flags.h"
#include "examples/cli/output_path.h"
#include "examples/cli/program.h"
#include "nn/copy_task/copy_task.h"
#include "examples/cli/model_flags.h"
#include "nn/copy_task/model_size.h"
#ifdef TAPEGRAD_WITH_DISTRIBUTED
#include "distributed/allreducer.h"
#include "distributed/parameters.h"
#endif

namespace {

using tapegrad::copy_task::Config;

void print_decodes(tapegrad::copy_task::Trainer& trainer, const Config& config) {
  tapegrad::Generator sample_gen(config.seed + 7);
  const auto src = tapegrad::copy_task::random_sequences(4, config.seq_len, config.vocab, sample_gen);
  trainer.model().eval();
  const auto out = tapegrad::copy_task::greedy_decode(trainer.model(), src, config.seq_len);
  std::printf("\nGreedy decodes:\n");
  for (std::size_t b = 0; b < 4; ++b) {
    std::printf("  source:");
    for (std::size_t s = 0; s < config.seq_len; ++s) std::printf(" %2lld", static_cast<long long>(src(b, s)));
    std::printf("\n  output:");
    for (std::size_t s = 0; s < config.seq_len; ++s) std::printf(" %2lld", static_cast<long long>(out(b, s)));
    std::printf("\n");
  }
}

// Trains (resuming from checkpoint when that file exists), prints the decodes and the accuracy;
// returns the exit status. Distributed, every rank resumes from the same file, rank 0's values are
// broadcast, and only rank 0 prints (the others' standard output is discarded) and saves.
// When to stop and what to demand of the result (negative accuracies: not asked for).
struct Goal {
  double expect_accuracy = -1.0;
  double stop_at_accuracy = -1.0;
};

int train(const Config& config, const std::string& checkpoint, const Goal& goal, bool distributed) {
  tapegrad::copy_task::Trainer trainer(config);
  std::size_t first_epoch = 1;
  const bool resume = !checkpoint.empty() && std::filesystem::exists(checkpoint);
  if (resume) {
    tapegrad::copy_task::warn_if_trained_at_another_seq_len("copy_task", checkpoint, trainer.load(checkpoint), config);
    first_epoch = trainer.steps() / config.batches_per_epoch + 1;
  }
  std::size_t rank = 0, ranks = 1;
#ifdef TAPEGRAD_WITH_DISTRIBUTED
  namespace dist = tapegrad::distributed;
  std::optional<dist::Context> mpi;  // declared before the reducer, so it outlives it
  std::unique_ptr<dist::GradientAllreducer<float>> reducer;
  if (distributed) {
    mpi.emplace();
    rank = static_cast<std::size_t>(mpi->rank());
    ranks = static_cast<std::size_t>(mpi->size());
    dist::broadcast_parameters(*mpi, trainer.model());  // checks that every rank has this model first
    reducer = std::make_unique<dist::GradientAllreducer<float>>(*mpi, trainer.model().named_parameters());
    trainer.set_data_parallel({.rank = rank, .ranks = ranks,
                               .sum_over_ranks = [&](double x) { return dist::global_sum(*mpi, x); },
                               .reduce_gradients = [&] { reducer->wait(); }});
    if (rank != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) throw std::runtime_error("cannot discard stdout");
  }
#else
  if (distributed)
    throw tapegrad::ValueError("--distributed needs a build with MPI (distributed/ is built when CMake finds MPI: "
                               "apt-get install libopenmpi-dev openmpi-bin, then configure again)");
#endif
  std::printf("Copy task: vocab %zu, seq %zu, batch %zu x %zu per epoch | model N=%zu d_model=%zu d_ff=%zu heads=%zu "
              "dropout=%.2f | %zu parameters | %zu threads",
              config.vocab, config.seq_len, config.batch, config.batches_per_epoch, config.layers, config.d_model,
              config.d_ff, config.heads, config.dropout, trainer.model().num_parameters(), tapegrad::num_threads());
  if (distributed) std::printf(" | %zu ranks, data-parallel", ranks);
  if (config.matmul_precision == tapegrad::MatmulPrecision::kBfloat16) std::printf(" | bf16 products");
  if (config.capture_steps) std::printf(" | captured steps");
  std::printf("\n");
  if (resume) std::printf("Resumed from %s at step %zu\n", checkpoint.c_str(), trainer.steps());
  const bool live = rank == 0 && isatty(STDERR_FILENO);
  using Clock = std::chrono::steady_clock;
  double seconds = 0.0;  // training alone: not the accuracy checks of --stop-at-accuracy
  for (std::size_t epoch = first_epoch; epoch <= config.epochs; ++epoch) {
    const auto start = Clock::now();
    const auto stats = trainer.run_epoch([&](std::size_t step, double loss) {
      if (live) std::fprintf(stderr, "\r  epoch %zu  step %zu/%zu  loss %.4f ", epoch, step, config.batches_per_epoch, loss);
    });
    if (live) std::fprintf(stderr, "\r%60s\r", "");
    std::printf("Epoch %3zu | Step %6zu | Loss %7.4f | Tokens / Sec %9.1f | Learning Rate %.1e", epoch, stats.steps,
                stats.loss, stats.tokens_per_sec, stats.learning_rate);
    if (!checkpoint.empty() && rank == 0) trainer.save(checkpoint);
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (goal.stop_at_accuracy >= 0.0) {
      const double accuracy = trainer.exact_match_accuracy(100);
      std::printf(" | Accuracy %3.0f%%\n", 100.0 * accuracy);
      if (accuracy >= goal.stop_at_accuracy) {
        std::printf("Reached %.0f%% after step %zu: %.2f s of training\n", 100.0 * accuracy, stats.steps, seconds);
        break;
      }
    } else {
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  print_decodes(trainer, config);
  const double accuracy = trainer.exact_match_accuracy(100);
  std::printf("\nTrained in %.1f s. Exact-match accuracy on 100 fresh sequences: %.0f%%\n", seconds, 100.0 * accuracy);
  if (const auto capture = trainer.capture_stats()) {
    std::printf("Step capture: %zu steps replayed from a %.1f MiB arena (%zu arrays a step), %zu recorded, %zu ran "
                "differently from their recording%s\n", capture->replayed_steps,
                static_cast<double>(capture->arena_bytes) / (1 << 20), capture->planned_blocks, capture->recorded_steps,
                capture->diverged_steps, capture->gave_up ? "; gave up planning" : "");
  }
  if (goal.expect_accuracy >= 0.0 && accuracy < goal.expect_accuracy) {
    std::fprintf(stderr, "copy_task: accuracy %.2f is below --expect-accuracy %.2f\n", accuracy, goal.expect_accuracy);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using tapegrad::examples::number_in;
  using tapegrad::examples::positive_integer;
  using tapegrad::examples::positive_number;
  Config config;
  std::size_t threads = 0;
  bool paper = false;
  Goal goal;
  std::string checkpoint;
  bool distributed = false;
  bool bf16 = false;
  CLI::App app{"Train a Transformer on The Annotated Transformer's copy task"};
  tapegrad::examples::use_short_messages(app, "copy_task");
  tapegrad::copy_task::add_model_flags(app, config, threads);
  app.add_option("--epochs", config.epochs, "epochs")->capture_default_str()->check(positive_integer());
  app.add_option("--batches-per-epoch", config.batches_per_epoch, "batches per epoch")
      ->capture_default_str()
      ->check(positive_integer());
  app.add_option("--lr-factor", config.lr_factor, "Noam factor")->capture_default_str()->check(positive_number());
  app.add_option("--dropout", config.dropout, "dropout rate")->capture_default_str()->check(number_in(0.0, 0.99));
  app.add_option("--label-smoothing", config.label_smoothing, "label smoothing")
      ->capture_default_str()
      ->check(number_in(0.0, 1.0));
  app.add_flag("--paper", paper,
               "the paper-size model: d_model 512, d_ff 2048, 8 heads; --d-model, --d-ff or --heads given as well "
               "win over it");
  app.add_option("--expect-accuracy", goal.expect_accuracy, "exit 1 when the final exact-match accuracy is below this")
      ->check(number_in(0.0, 1.0));
  app.add_option("--stop-at-accuracy", goal.stop_at_accuracy,
                 "after every epoch, decode 100 fresh sequences and stop once this exact-match accuracy is reached "
                 "(the time printed is training alone)")
      ->check(number_in(0.0, 1.0));
  app.add_option("--checkpoint", checkpoint,
                 "save the training state here after every epoch; resume from it when it exists");
  app.add_flag("--distributed", distributed,
               "data-parallel training as one rank of mpirun -np N (a build with MPI)");
  app.add_flag("--bf16", bf16,
               "mixed precision: matrix products take bf16 inputs and accumulate in fp32; weights, Adam's state "
               "and everything else stay fp32");
  app.add_flag("--capture", config.capture_steps,
               "record the first training step's arrays and replay later steps from one planned arena: the same "
               "results bit for bit, less memory and no heap allocation per op");
  CLI11_PARSE(app, argc, argv);
  if (bf16) config.matmul_precision = tapegrad::MatmulPrecision::kBfloat16;
  if (paper) {
    // A preset: the size flags given explicitly win over it.
    if (app.count("--d-model") == 0) config.d_model = 512;
    if (app.count("--d-ff") == 0) config.d_ff = 2048;
    if (app.count("--heads") == 0) config.heads = 8;
  }
  return tapegrad::examples::run_guarded("copy_task", "training " + tapegrad::copy_task::describe_run(config), [&] {
    tapegrad::copy_task::check_model_flags(config);
    if (!checkpoint.empty()) tapegrad::examples::check_output_file("--checkpoint", checkpoint);
    tapegrad::set_num_threads(threads);
    return train(config, checkpoint, goal, distributed);
  });
}
