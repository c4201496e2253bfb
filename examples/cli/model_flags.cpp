#include "examples/cli/model_flags.h"

#include <cstdio>
#include <string>

#include "examples/cli/flags.h"
#include "examples/cli/program.h"

namespace tapegrad::copy_task {

namespace {
// More workers than this is a typo, not a machine.
constexpr std::uint64_t kMaxThreads = 4096;
}  // namespace

void add_model_flags(CLI::App& app, Config& config, std::size_t& threads) {
  using examples::integer_in;
  using examples::positive_integer;
  app.add_option("--d-model", config.d_model, "model width")->capture_default_str()->check(positive_integer());
  app.add_option("--d-ff", config.d_ff, "feed-forward width")->capture_default_str()->check(positive_integer());
  app.add_option("--heads", config.heads, "attention heads")->capture_default_str()->check(positive_integer());
  app.add_option("--layers", config.layers, "encoder and decoder layers (N)")
      ->capture_default_str()
      ->check(positive_integer());
  app.add_option("--seq-len", config.seq_len, "tokens per sequence, start symbol included (checkpoints record it)")
      ->capture_default_str()
      ->check(integer_in(2, kMaxSeqLen));
  app.add_option("--batch", config.batch, "sequences per training batch")
      ->capture_default_str()
      ->check(positive_integer());
  app.add_option("--warmup", config.warmup, "Noam warm-up steps")->capture_default_str()->check(positive_integer());
  app.add_option("--seed", config.seed, "seed of initialisation, data and dropout")
      ->capture_default_str()
      ->check(integer_in(0, examples::kNoLimit));
  app.add_option("--threads", threads, "worker threads (0 = all cores)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxThreads, "0 (all cores) or a thread count up to " + std::to_string(kMaxThreads)));
}

void check_model_flags(const Config& config) {
  if (config.d_model % config.heads != 0) {
    throw examples::UsageError("--d-model " + std::to_string(config.d_model) + " must be divisible by --heads " +
                               std::to_string(config.heads));
  }
}

void warn_if_trained_at_another_seq_len(const std::string& program, const std::string& checkpoint,
                                        std::optional<std::size_t> trained_seq_len, const Config& config) {
  if (!trained_seq_len || *trained_seq_len == config.seq_len) return;
  std::fprintf(stderr,
               "%s: warning: the checkpoint '%s' was trained on sequences of %zu tokens, but --seq-len is %zu: the "
               "model never saw that length (expect a low accuracy)\n",
               program.c_str(), checkpoint.c_str(), *trained_seq_len, config.seq_len);
}

}  // namespace tapegrad::copy_task
