// Rows of docs/bad-inputs.md, section "copy_task": bad command-line flags of the example program
// give a message and a non-zero exit status, never a crash or a run with nonsense settings.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

namespace fs = std::filesystem;

// Runs copy_task with `args` (a shell word list); the outcome is "exit N" or "signal N" and what
// it printed on stderr (its errors; its progress goes to stdout).
Outcome run_copy_task(const std::string& args) {
  const std::string command = std::string(COPY_TASK_EXE) + " " + args + " 2>&1 >/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"popen failed", command};
  std::string output;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) return {"exit " + std::to_string(WEXITSTATUS(status)), output};
  return {"signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : -1), output};
}

// A checkpoint of a one-step run of a d_model 8 model, for resuming with the default d_model 32.
std::string small_model_checkpoint() {
  const std::string path = scratch("small.safetensors").string();
  run_copy_task("--d-model 8 --heads 2 --d-ff 8 --epochs 1 --batches-per-epoch 1 --checkpoint " + path);
  return path;
}

// Each row runs copy_task with args built by the expression `args` and expects exit status
// `status` and every fragment in the output.
#define COPY_TASK_ROW(id, args, status, ...)                                                                   \
  static const bool bad_input_registered_##id =                                                                \
      ::tapegrad::bad_inputs::register_row(#id, [] { return run_copy_task(args); });                           \
  TEST(BadInputCopyTask, id) {                                                                                 \
    const Outcome outcome = run_copy_task(args);                                                               \
    EXPECT_EQ(outcome.kind, "exit " #status) << outcome.message;                                               \
    for (const char* fragment : {__VA_ARGS__})                                                                 \
      EXPECT_NE(outcome.message.find(fragment), std::string::npos) << "output lacks \"" << fragment << "\":\n" \
                                                                   << outcome.message;                         \
  }

COPY_TASK_ROW(copy_task_zero_heads, "--heads 0", 105, "--heads", "0", "positive integer")
COPY_TASK_ROW(copy_task_d_model_not_multiple_of_heads, "--d-model 30 --heads 4", 2, "--d-model 30", "--heads 4")
COPY_TASK_ROW(copy_task_negative_epochs, "--epochs -1", 105, "--epochs", "-1")
COPY_TASK_ROW(copy_task_batch_not_a_number, "--batch abc", 105, "--batch", "abc")
COPY_TASK_ROW(copy_task_unknown_flag, "--learning-rate 3", 109, "--learning-rate")
COPY_TASK_ROW(copy_task_flag_without_value, "--seed", 114, "--seed")
COPY_TASK_ROW(copy_task_dropout_above_range, "--dropout 1.5", 105, "--dropout", "1.5")
COPY_TASK_ROW(copy_task_dropout_nan, "--dropout nan", 105, "--dropout", "nan")
COPY_TASK_ROW(copy_task_lr_factor_nan, "--lr-factor nan", 105, "--lr-factor", "nan")
COPY_TASK_ROW(copy_task_lr_factor_infinite, "--lr-factor inf", 105, "--lr-factor", "inf")
COPY_TASK_ROW(copy_task_label_smoothing_nan, "--label-smoothing nan", 105, "--label-smoothing", "nan")
COPY_TASK_ROW(copy_task_expect_accuracy_above_one, "--expect-accuracy 2", 105, "--expect-accuracy", "2")
COPY_TASK_ROW(copy_task_negative_threads, "--threads -1", 105, "--threads", "-1")
COPY_TASK_ROW(copy_task_zero_lr_factor, "--lr-factor 0", 105, "--lr-factor", "positive number", "0")
COPY_TASK_ROW(copy_task_checkpoint_corrupt,
              "--checkpoint " + write_scratch("corrupt.safetensors", "garbage!garbage").string(), 1,
              "copy_task: load_safetensors", "corrupt.safetensors")
COPY_TASK_ROW(copy_task_checkpoint_is_a_directory, "--checkpoint /", 1, "copy_task: load_safetensors",
              "not a regular file")
COPY_TASK_ROW(copy_task_checkpoint_of_another_model, "--checkpoint " + small_model_checkpoint(), 1,
              "copy_task: load_checkpoint", "small.safetensors", "load_state_dict", "[11,8]", "[11,32]")
COPY_TASK_ROW(
    copy_task_checkpoint_unwritable,
    "--epochs 1 --batches-per-epoch 1 --d-model 8 --heads 2 --d-ff 8 --layers 1 --checkpoint /proc/no/ck.safetensors",
    1, "copy_task: save_safetensors", "/proc/no/ck.safetensors", "No such file")

}  // namespace
}  // namespace tapegrad::bad_inputs
