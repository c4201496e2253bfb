// Rows of docs/bad-inputs.md, section "copy_task": bad command-line flags of the example program
// give a message and a non-zero exit status, never a crash or a run with nonsense settings.
#include <string>

#include <gtest/gtest.h>

#include "tests/bad_inputs/program_row.h"

namespace tapegrad::bad_inputs {
namespace {

// A checkpoint of a one-step run of a copy_task started with `size_flags`.
std::string checkpoint_of(const std::string& name, const std::string& size_flags) {
  const std::string path = scratch(name).string();
  run_program(COPY_TASK_EXE, size_flags + " --epochs 1 --batches-per-epoch 1 --checkpoint " + path);
  return path;
}

// 300 digits: a value that fits no integer type and must not be echoed whole.
const std::string kLongNumber(300, '1');

#define COPY_TASK_ROW(id, args, status, ...) PROGRAM_ROW(CopyTask, COPY_TASK_EXE, id, args, status, __VA_ARGS__)

COPY_TASK_ROW(copy_task_zero_heads, "--heads 0", 105, "--heads", "0", "positive integer")
COPY_TASK_ROW(copy_task_d_model_not_multiple_of_heads, "--d-model 30 --heads 4", 2, "--d-model 30", "--heads 4")
COPY_TASK_ROW(copy_task_negative_epochs, "--epochs -1", 105, "--epochs", "-1")
// The echo keeps what made the value invalid (it once said "got 1").
COPY_TASK_ROW(copy_task_epochs_with_a_space, "--epochs ' 1'", 105, "--epochs", "got ' 1'")
COPY_TASK_ROW(copy_task_epochs_too_large, "--epochs 99999999999999999999", 105, "--epochs",
              "got '99999999999999999999' (more than 2^64 - 1)")
COPY_TASK_ROW(copy_task_negative_seed, "--seed -1", 105, "--seed", "non-negative integer, got '-1'")
COPY_TASK_ROW(copy_task_batch_of_300_digits, "--batch " + kLongNumber, 105, "--batch",
              "got '111111111111111111111111...' (300 characters)")
COPY_TASK_ROW(copy_task_unknown_flag_with_300_digits, "--learning-rate " + kLongNumber, 109, "not expected",
              "111111111111111111111111... (300 characters) --learning-rate")
COPY_TASK_ROW(copy_task_batch_not_a_number, "--batch abc", 105, "--batch", "abc")
COPY_TASK_ROW(copy_task_unknown_flag, "--learning-rate 3", 109, "--learning-rate")
COPY_TASK_ROW(copy_task_flag_without_value, "--seed", 114, "--seed")
COPY_TASK_ROW(copy_task_dropout_above_range, "--dropout 1.5", 105, "--dropout", "1.5")
COPY_TASK_ROW(copy_task_dropout_nan, "--dropout nan", 105, "--dropout", "nan")
COPY_TASK_ROW(copy_task_lr_factor_nan, "--lr-factor nan", 105, "--lr-factor", "nan")
COPY_TASK_ROW(copy_task_lr_factor_infinite, "--lr-factor inf", 105, "--lr-factor", "inf")
COPY_TASK_ROW(copy_task_lr_factor_overflows, "--lr-factor 1e400", 105, "--lr-factor", "1e400")
COPY_TASK_ROW(copy_task_label_smoothing_nan, "--label-smoothing nan", 105, "--label-smoothing", "nan")
COPY_TASK_ROW(copy_task_expect_accuracy_above_one, "--expect-accuracy 2", 105, "--expect-accuracy", "2")
COPY_TASK_ROW(copy_task_stop_at_accuracy_nan, "--stop-at-accuracy nan", 105, "--stop-at-accuracy", "nan")
COPY_TASK_ROW(copy_task_negative_threads, "--threads -1", 105, "--threads", "-1")
COPY_TASK_ROW(copy_task_too_many_threads, "--threads 5000", 105, "--threads", "5000")
COPY_TASK_ROW(copy_task_zero_lr_factor, "--lr-factor 0", 105, "--lr-factor", "positive number", "0")
// --paper is a preset: the size flags given with it win (the old program trained the paper model).
COPY_TASK_ROW(copy_task_paper_with_d_model, "--paper --d-model 30 --epochs 1 --batches-per-epoch 1", 2,
              "--d-model 30 must be divisible by --heads 8")
COPY_TASK_ROW(copy_task_paper_with_heads, "--paper --heads 7 --epochs 1 --batches-per-epoch 1", 2,
              "--d-model 512 must be divisible by --heads 7")
// A Noam factor of 1e30 makes the second step's loss NaN (the old program printed "Loss -nan" for
// every epoch and exited 0).
COPY_TASK_ROW(copy_task_loss_diverges, "--lr-factor 1e30 --warmup 1 --epochs 2 --batches-per-epoch 5", 1,
              "the training loss is", "at step", "(epoch 1, batch", "of 5): training diverged")
COPY_TASK_ROW(copy_task_model_too_large_for_memory, "--d-model 1000000 --d-ff 4000000 --heads 1", 1,
              "a model of 56,000,079,000,011 parameters", "needs at least 896.0 TB", "of memory")
// 10^12 sequences: the old program died in std::bad_alloc without a word of what was asked for.
COPY_TASK_ROW(copy_task_batch_too_large_for_memory, "--batch 1000000000000", 1,
              "on batches of 1000000000000 sequences of 10 tokens needs at least 18.4 PB",
              "for one batch's activations")
COPY_TASK_ROW(copy_task_checkpoint_corrupt,
              "--checkpoint " + write_scratch("corrupt.safetensors", "garbage!garbage").string(), 1,
              "copy_task: load_safetensors", "corrupt.safetensors")
COPY_TASK_ROW(copy_task_checkpoint_is_a_directory, "--checkpoint /", 2, "--checkpoint '/'",
              "is a directory, not a file")
COPY_TASK_ROW(copy_task_checkpoint_of_another_model,
              "--checkpoint " + checkpoint_of("small.safetensors", "--d-model 8 --heads 2 --d-ff 8"), 1,
              "copy_task: load_checkpoint", "small.safetensors", "load_state_dict", "[11,8]", "[11,32]")
// The old program reported "missing generator states" (the dropout streams of the second layer).
COPY_TASK_ROW(copy_task_checkpoint_of_another_depth,
              "--checkpoint " + checkpoint_of("one_layer.safetensors", "--layers 1"), 1, "copy_task: load_checkpoint",
              "one_layer.safetensors", "missing parameters [decoder.decoder_layers.1.")
// Output paths are checked before training (the old program failed after the first epoch).
COPY_TASK_ROW(copy_task_checkpoint_unwritable, "--checkpoint /proc/no/ck.safetensors", 2,
              "--checkpoint '/proc/no/ck.safetensors'", "'/proc/no' does not exist")
COPY_TASK_ROW(copy_task_checkpoint_directory_refuses_files, "--checkpoint /proc/ck.safetensors", 2,
              "--checkpoint '/proc/ck.safetensors'", "cannot create a file in '/proc'")
COPY_TASK_ROW(copy_task_checkpoint_directory_is_a_file,
              "--checkpoint " + (write_scratch("a_file", "x") / "ck.safetensors").string(), 2,
              "/a_file' is not a directory")

// Not a bad input: --stop-at-accuracy's contract, beside its bad value above. Accuracy 0 is reached
// after the first epoch, which is then the only one trained; without the flag every epoch runs.
std::string standard_output_of(const std::string& args) {
  const Outcome outcome = run_program(COPY_TASK_EXE, args, Stream::kStdout);
  EXPECT_EQ(outcome.kind, "exit 0") << args;
  return outcome.message;
}

std::size_t count(const std::string& text, const std::string& word) {
  std::size_t n = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

TEST(CopyTaskProgram, StopAtAccuracyEndsTrainingAtTheFirstEpochReachingIt) {
  const std::string small = "--epochs 3 --batches-per-epoch 2 --d-model 8 --d-ff 8 --heads 2";
  const std::string stopped = standard_output_of(small + " --stop-at-accuracy 0");
  EXPECT_EQ(count(stopped, "Epoch "), 1u) << stopped;
  EXPECT_NE(stopped.find("| Accuracy "), std::string::npos) << stopped;
  EXPECT_NE(stopped.find("after step 2: "), std::string::npos) << stopped;
  const std::string full = standard_output_of(small);
  EXPECT_EQ(count(full, "Epoch "), 3u) << full;
  EXPECT_EQ(full.find("Reached"), std::string::npos) << full;
}

// Not a bad input either: a checkpoint resumed at another --seq-len than it was trained at runs,
// with a warning naming both lengths; at its own length, without one.
TEST(CopyTaskProgram, ResumingAtAnotherSequenceLengthWarnsNamingBoth) {
  const std::string small = "--d-model 8 --d-ff 8 --heads 2";
  const std::string path = checkpoint_of("seq10.safetensors", small);
  const Outcome same = run_program(COPY_TASK_EXE, small + " --epochs 2 --batches-per-epoch 1 --checkpoint " + path);
  EXPECT_EQ(same.kind, "exit 0") << same.message;
  EXPECT_EQ(same.message.find("warning"), std::string::npos) << same.message;
  const Outcome other =
      run_program(COPY_TASK_EXE, small + " --epochs 3 --batches-per-epoch 1 --seq-len 12 --checkpoint " + path);
  EXPECT_EQ(other.kind, "exit 0") << other.message;
  for (const char* fragment : {"copy_task: warning:", "sequences of 10 tokens", "--seq-len is 12"})
    EXPECT_NE(other.message.find(fragment), std::string::npos) << other.message;
}

}  // namespace
}  // namespace tapegrad::bad_inputs
