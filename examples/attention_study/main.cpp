// attention_study: how attention and its gradient look in a copy-task Transformer.
// Trains a small copy-task model (or loads one with --checkpoint), runs one batch of a few
// sequences under a GradientTape, backward from L (--metric: by default the target token's mean
// logit), and writes into --out one interactive page
// (index.html): an overview of every head's A and dL/dS, each head's A, S, dL/dA and dL/dS, the
// attribution maps, the gradient-norm and head-ablation tables and the training loss curve; and
// the tables as CSV. See report.h for the files. Also writes the data for other tools (export.h:
// attention.safetensors, npy/, bertviz.json) and, when it trains, snapshots.safetensors: A, dL/dA,
// S and dL/dS of the study batch at steps 0, 1, 2, 4, ..., the last (study/training_snapshots.h),
// whose A and dL/dA the page's slider steps through.
// The study batch is --sequences random sequences, or the user's (--tokens, --tokens-file:
// study_tokens.h), whose length --seq-len then follows.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autograd/kernels/parallel.h"
#include "examples/attention_study/circuit.h"
#include "examples/attention_study/export.h"
#include "examples/attention_study/report.h"
#include "examples/attention_study/study.h"
#include "examples/attention_study/study_tokens.h"
#include "examples/attention_study/tables.h"
#include "examples/cli/flags.h"
#include "examples/cli/output_path.h"
#include "examples/cli/program.h"
#include "nn/copy_task/copy_task.h"
#include "examples/cli/model_flags.h"
#include "nn/copy_task/model_size.h"
#include "study/training_snapshots.h"

namespace {

constexpr std::size_t kAccuracySequences = 100;
// The study sequences come from their own stream, so they are the same whether the model was
// trained here or loaded.
constexpr std::uint64_t kStudyStream = 0x5EED5EED;
// The circuit study's corruption of the study batch, from a stream of its own.
constexpr std::uint64_t kCorruptionStream = 0xC0220;
// The attention cells printed, largest first (cells.csv has them all).
constexpr std::size_t kTopCells = 5;

// The flags that are not the model's (copy_task/model_flags.h has those).
struct Options {
  std::size_t steps = 300, sequences = 3;
  bool snapshots = true, circuit = true;
  tapegrad::attention_study::MetricChoice metric;
  std::string checkpoint, save_checkpoint, out = "attention_study_out";
  std::string tokens, tokens_file;  // the study batch, when given (tokens_given: which one)
  bool tokens_given = false, tokens_file_given = false, seq_len_given = false;
};

// The study batch of --tokens or --tokens-file, nullopt for random sequences. --seq-len follows
// the given sequences: given as well, it must agree with them.
std::optional<tapegrad::IndexArray> given_sequences(const Options& options, tapegrad::copy_task::Config& config) {
  using namespace tapegrad;
  if (!options.tokens_given && !options.tokens_file_given) return std::nullopt;
  IndexArray data = options.tokens_given ? attention_study::parse_study_tokens(options.tokens, config.vocab)
                                         : attention_study::read_study_tokens_file(options.tokens_file, config.vocab);
  const std::size_t length = data.shape()[1];
  if (options.seq_len_given && config.seq_len != length) {
    throw examples::UsageError(std::string(options.tokens_given ? "--tokens" : "--tokens-file") + ": the sequences have " +
                               std::to_string(length) + " tokens, but --seq-len is " + std::to_string(config.seq_len) +
                               " (leave --seq-len out: it follows the given sequences)");
  }
  config.seq_len = length;
  return data;
}

// --metric-position names one of the seq_len - 1 target positions (the tokens after the start
// symbol), checked before anything trains.
void check_metric_position(const tapegrad::attention_study::MetricChoice& metric, std::size_t seq_len) {
  if (metric.position && *metric.position + 1 >= seq_len) {
    throw tapegrad::examples::UsageError("--metric-position: " + std::to_string(*metric.position) +
                                         " is past the target positions of sequences of " + std::to_string(seq_len) +
                                         " tokens (0 to " + std::to_string(seq_len - 2) + ")");
  }
}

// Trains or loads the model, studies one batch and writes the report; returns the exit status.
// given: the study batch of --tokens or --tokens-file, else nullopt.
int study(const tapegrad::copy_task::Config& config, const Options& options,
          const std::optional<tapegrad::IndexArray>& given) {
  using namespace tapegrad;
  copy_task::Trainer trainer(config);
  // The study batch, drawn first: it is also the fixed probe batch of the training snapshots.
  Generator study_gen(config.seed ^ kStudyStream);
  const IndexArray data =
      given ? *given : copy_task::random_sequences(options.sequences, config.seq_len, config.vocab, study_gen);
  attention_study::RunInfo run;
  run.config = config;
  run.batch_source = options.tokens_given        ? "given by --tokens"
                     : options.tokens_file_given ? "read from --tokens-file " + options.tokens_file
                                                 : "random";
  std::vector<study::AttentionSnapshot> snapshots;  // while training, on the study batch
  if (!options.checkpoint.empty()) {
    copy_task::warn_if_trained_at_another_seq_len("attention_study", options.checkpoint,
                                                  trainer.load(options.checkpoint), config);
    run.source = "loaded from " + options.checkpoint + " at step " + std::to_string(trainer.steps());
  } else {
    std::printf("Training a copy-task model: N=%zu d_model=%zu d_ff=%zu heads=%zu, %zu steps of %zu sequences\n",
                config.layers, config.d_model, config.d_ff, config.heads, options.steps, config.batch);
    const std::size_t every = std::max<std::size_t>(1, options.steps / 10);
    const copy_task::Batch probe_batch = copy_task::make_batch(data);
    const study::RunLoss<float> probe = attention_study::study_metric(trainer.model(), probe_batch, options.metric);
    const std::vector<std::size_t> schedule = study::doubling_schedule(options.steps);
    if (options.snapshots) snapshots.push_back(study::take_snapshot(trainer.model(), probe, 0));
    trainer.run_epoch([&](std::size_t step, double loss) {  // one epoch: step counts from the start
      run.losses.push_back(loss);
      if (step % every == 0 || step == options.steps) std::printf("  step %5zu  loss %.4f\n", step, loss);
      if (options.snapshots && std::binary_search(schedule.begin(), schedule.end(), step))
        snapshots.push_back(study::take_snapshot(trainer.model(), probe, step));
    });
    if (options.snapshots) {
      std::filesystem::create_directories(options.out);
      study::save_snapshots(std::filesystem::path(options.out) / "snapshots.safetensors", snapshots);
    }
    run.source =
        "trained here for " + std::to_string(options.steps) + " steps (seed " + std::to_string(config.seed) + ")";
    if (!options.save_checkpoint.empty()) trainer.save(options.save_checkpoint);
  }
  run.steps = trainer.steps();
  run.accuracy = trainer.exact_match_accuracy(kAccuracySequences);
  run.accuracy_sequences = kAccuracySequences;

  const attention_study::StudyResult result = attention_study::study_batch(trainer.model(), data, options.metric);
  std::optional<attention_study::CircuitStudy> circuit;
  if (options.circuit)
    circuit = attention_study::circuit_study(trainer.model(), data, config.vocab, config.seed ^ kCorruptionStream, result);
  attention_study::write_report(options.out, run, result, snapshots, circuit ? &*circuit : nullptr);
  attention_study::write_exports(options.out, run, result, data);
  std::printf("Model: %s; exact-match accuracy %.0f%%. Study batch loss %.4f, L (%s) %.4f; softmax-backward checks %s.\n",
              run.source.c_str(), 100.0 * run.accuracy, result.loss, attention_study::metric_name(result.metric).c_str(),
              result.metric_value, result.checks_passed ? "passed" : "FAILED");
  std::printf("Head ablation (A of the head := 0; change = ablated - clean loss):\n%s",
              attention_study::to_markdown(attention_study::head_ablation_table(result)).c_str());
  if (circuit) {
    std::printf("Patching every head's z, q and k from the study batch into a corrupted copy (metric: logit difference, "
                "clean %.4f, corrupted %.4f); each method against exact patching (circuit.csv):\n%s",
                circuit->clean_metric, circuit->corrupted_metric,
                attention_study::to_markdown(attention_study::method_agreement_table(*circuit)).c_str());
    std::fputs(attention_study::atp_diagnostic_summary(circuit->atp_check, circuit->clean_metric - circuit->corrupted_metric)
                   .c_str(),
               stdout);
    std::printf("Patching each of its %zu edges (a head, feed-forward or embedding into an attention input or the "
                "output) the same way; EAP and EAP-IG against exact path patching (edges.csv):\n%s",
                circuit->edges.exact.rows.size(),
                attention_study::to_markdown(attention_study::edge_method_table(circuit->edges)).c_str());
    std::printf("And its %zu edges into each head's share of an attention input (edges_per_head.csv):\n%s",
                circuit->edges_per_head.exact.rows.size(),
                attention_study::to_markdown(attention_study::edge_method_table(circuit->edges_per_head)).c_str());
    const attention_study::CellSweep& cells = circuit->cells;
    std::printf("%s %s is the module whose heads' z patches recover the most.\n",
                attention_study::cell_sweep_summary(cells).c_str(), cells.name.c_str());
    if (cells.swept) {
      std::printf("%s", attention_study::to_markdown(attention_study::cell_table(cells, kTopCells)).c_str());
    }
  }
  std::printf("Wrote %s\n", (std::filesystem::path(options.out) / "index.html").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using tapegrad::examples::integer_in;
  using tapegrad::examples::positive_integer;
  tapegrad::copy_task::Config config;
  config.batch = 32;
  config.warmup = 100;
  config.epochs = 1;
  Options options;
  std::size_t threads = 0;
  CLI::App app{"Draw the attention maps of a copy-task Transformer and the gradient of a metric (--metric) with respect to them"};
  tapegrad::examples::use_short_messages(app, "attention_study");
  tapegrad::copy_task::add_model_flags(app, config, threads);
  auto* load_option = app.add_option(
      "--checkpoint", options.checkpoint,
      "load this copy-task checkpoint (copy_task --checkpoint, same size flags) instead of training");
  app.add_option("--out", options.out, "output directory")->capture_default_str();
  app.add_option("--steps", options.steps, "training steps when not loading a checkpoint")
      ->capture_default_str()
      ->check(positive_integer());
  app.add_option("--save-checkpoint", options.save_checkpoint, "save the trained model's checkpoint here")
      ->excludes(load_option);
  auto* sequences_option = app.add_option("--sequences", options.sequences, "random sequences in the studied batch")
                               ->capture_default_str()
                               ->check(integer_in(1, tapegrad::attention_study::kMaxStudySequences));
  auto* tokens_option =
      app.add_option("--tokens", options.tokens,
                     "study these sequences instead: token ids, sequences separated by ';' (\"1 5 7 3; 1 9 2 4\"), "
                     "each the start symbol 1 then tokens 2 to " + std::to_string(config.vocab - 1) +
                         "; --seq-len follows them")
          ->excludes(sequences_option);
  app.add_option("--tokens-file", options.tokens_file,
                 "study the sequences of this file instead, one a line (as --tokens)")
      ->excludes(sequences_option)
      ->excludes(tokens_option);
  tapegrad::examples::add_switch(app, "snapshots", options.snapshots,
                                 "while training, save A, dL/dA, S and dL/dS of the study batch at steps 0, 1, 2, "
                                 "4, ..., the last (snapshots.safetensors)");
  std::string metric = "target-logit";
  const std::map<std::string, tapegrad::attention_study::StudyMetric> metrics = {
      {"target-logit", tapegrad::attention_study::StudyMetric::kTargetLogit},
      {"target-log-prob", tapegrad::attention_study::StudyMetric::kTargetLogProb},
      {"loss", tapegrad::attention_study::StudyMetric::kLoss}};
  app.add_option("--metric", metric,
                 "L, what every gradient of the study is of: the target token's mean logit (Chefer et al.'s score), "
                 "its log-probability, or the loss (minus the log-probability)")
      ->check(CLI::IsMember({"target-logit", "target-log-prob", "loss"}))
      ->capture_default_str();
  std::size_t metric_position = 0;
  app.add_option("--metric-position", metric_position,
                 "take L at this target position only (0 = the first token after the start symbol), not the mean "
                 "over all of them");
  tapegrad::examples::add_switch(app, "circuit", options.circuit,
                                 "patch every head's z, q and k, and every edge between them, from the study batch "
                                 "into a corrupted copy, exactly and by attribution patching (circuit.csv, "
                                 "patching_methods.csv, atp_diagnostic.csv, edges.csv, edge_methods.csv, "
                                 "edges_per_head.csv, edge_methods_per_head.csv), and the residual stream's positions "
                                 "and one module's attention cells (positions.csv, cells.csv)");
  CLI11_PARSE(app, argc, argv);
  options.metric = {metrics.at(metric), app.count("--metric-position") > 0
                                            ? std::optional<std::size_t>(metric_position)
                                            : std::nullopt};
  options.tokens_given = app.count("--tokens") > 0;
  options.tokens_file_given = app.count("--tokens-file") > 0;
  options.seq_len_given = app.count("--seq-len") > 0;
  config.batches_per_epoch = options.steps;  // one epoch = the whole training run
  return tapegrad::examples::run_guarded(
      "attention_study", "studying " + tapegrad::copy_task::describe_run(config), [&] {
        tapegrad::copy_task::check_model_flags(config);
        tapegrad::examples::check_output_directory("--out", options.out);
        if (!options.save_checkpoint.empty())
          tapegrad::examples::check_output_file("--save-checkpoint", options.save_checkpoint);
        const std::optional<tapegrad::IndexArray> given = given_sequences(options, config);
        check_metric_position(options.metric, config.seq_len);
        tapegrad::set_num_threads(threads);
        return study(config, options, given);
      });
}
