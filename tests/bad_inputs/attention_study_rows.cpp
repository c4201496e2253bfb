// Rows of docs/bad-inputs.md, section "attention_study": bad command-line flags of the example
// program give a message and a non-zero exit status, never a crash (--threads -1 aborted it) or a
// run with nonsense settings. Its flags are checked by the same code as copy_task's.
#include <string>

#include "tests/bad_inputs/program_row.h"

namespace tapegrad::bad_inputs {
namespace {

// A checkpoint of a one-step attention_study run with one layer (the default is two).
std::string one_layer_checkpoint() {
  const std::string path = scratch("study_one_layer.safetensors").string();
  run_program(ATTENTION_STUDY_EXE, "--layers 1 --steps 1 --save-checkpoint " + path + " --out " +
                                       scratch("study_one_layer_out").string());
  return path;
}

#define ATTENTION_STUDY_ROW(id, args, status, ...) \
  PROGRAM_ROW(AttentionStudy, ATTENTION_STUDY_EXE, id, args, status, __VA_ARGS__)

ATTENTION_STUDY_ROW(attention_study_negative_threads, "--threads -1", 105, "--threads", "got '-1'")
ATTENTION_STUDY_ROW(attention_study_steps_too_large, "--steps 99999999999999999999", 105, "--steps",
                    "got '99999999999999999999' (more than 2^64 - 1)")
ATTENTION_STUDY_ROW(attention_study_negative_seed, "--seed -1", 105, "--seed", "non-negative integer, got '-1'")
ATTENTION_STUDY_ROW(attention_study_sequences_of_300_digits, "--sequences " + std::string(300, '1'), 105,
                    "--sequences", "got '111111111111111111111111...' (300 characters)")
ATTENTION_STUDY_ROW(attention_study_seq_len_above_range, "--seq-len 65", 105, "--seq-len", "from 2 to 64, got '65'")
ATTENTION_STUDY_ROW(attention_study_unknown_metric, "--metric logit", 105, "--metric",
                    "logit not in {target-logit,target-log-prob,loss}")
ATTENTION_STUDY_ROW(attention_study_zero_heads, "--heads 0", 105, "--heads", "positive integer, got '0'")
ATTENTION_STUDY_ROW(attention_study_d_model_not_multiple_of_heads, "--d-model 30 --heads 4", 2, "--d-model 30",
                    "--heads 4")
ATTENTION_STUDY_ROW(attention_study_model_too_large_for_memory, "--d-model 1000000 --d-ff 4000000 --heads 1", 1,
                    "a model of 56,000,079,000,011 parameters", "needs at least 896.0 TB")
ATTENTION_STUDY_ROW(attention_study_checkpoint_of_another_depth, "--checkpoint " + one_layer_checkpoint(), 1,
                    "attention_study: load_checkpoint", "missing parameters [decoder.decoder_layers.1.")
// Output paths are checked before training (the old program trained, then failed to write).
ATTENTION_STUDY_ROW(attention_study_out_unwritable, "--out /proc/no/out", 2, "--out '/proc/no/out'",
                    "cannot create a file in '/proc'")
ATTENTION_STUDY_ROW(attention_study_out_is_a_file, "--out " + write_scratch("a_file", "x").string(), 2,
                    "/a_file' is not a directory")
ATTENTION_STUDY_ROW(attention_study_save_checkpoint_unwritable, "--save-checkpoint /proc/no/ck.safetensors", 2,
                    "--save-checkpoint '/proc/no/ck.safetensors'", "'/proc/no' does not exist")

}  // namespace
}  // namespace tapegrad::bad_inputs
