// Rows of docs/bad-inputs.md, section "attention_study": bad command-line flags of the example
// program give a message and a non-zero exit status, never a crash (--threads -1 aborted it) or a
// run with nonsense settings. Its flags are checked by the same code as copy_task's.
#include <string>

#include "tests/bad_inputs/program_row.h"

namespace tapegrad::bad_inputs {
namespace {

// `word` n times.
std::string repeated(const std::string& word, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += word;
  return out;
}

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

// The study batch given as tokens (--tokens, --tokens-file): each refusal names the flag, the
// sequence, the position and the token as written.
ATTENTION_STUDY_ROW(attention_study_tokens_without_start, "--tokens '2 5 7'", 2, "--tokens: sequence 0, position 0",
                    "'2' is not the start symbol 1")
ATTENTION_STUDY_ROW(attention_study_tokens_with_padding, "--tokens '1 5 7; 1 9 0'", 2,
                    "--tokens: sequence 1, position 2: '0' is the padding symbol")
ATTENTION_STUDY_ROW(attention_study_tokens_outside_vocabulary, "--tokens '1 5 7; 1 11 3'", 2,
                    "--tokens: sequence 1, position 1: '11' is outside the copy task's tokens, 2 to 10")
ATTENTION_STUDY_ROW(attention_study_tokens_start_inside, "--tokens '1 5 1'", 2,
                    "--tokens: sequence 0, position 2: '1' is the start symbol, which only begins a sequence")
ATTENTION_STUDY_ROW(attention_study_tokens_not_a_number, "--tokens '1 5 -3'", 2,
                    "--tokens: sequence 0, position 2: '-3' is not a token id")
ATTENTION_STUDY_ROW(attention_study_tokens_of_two_lengths, "--tokens '1 5 7 3; 1 9 2'", 2,
                    "--tokens: sequence 1 has 3 tokens, sequence 0 has 4")
ATTENTION_STUDY_ROW(attention_study_tokens_start_alone, "--tokens '1'", 2, "--tokens: sequence 0 has 1 token",
                    "1 to 63 tokens")
ATTENTION_STUDY_ROW(attention_study_tokens_longer_than_64, "--tokens '1" + repeated(" 2", 64) + "'", 2,
                    "--tokens: sequence 0 has 65 tokens")
ATTENTION_STUDY_ROW(attention_study_tokens_17_sequences, "--tokens '1 2" + repeated("; 1 2", 16) + "'", 2,
                    "--tokens: sequence 16 is one too many", "at most 16 sequences")
ATTENTION_STUDY_ROW(attention_study_tokens_none, "--tokens ' ; '", 2, "--tokens: no sequence")
ATTENTION_STUDY_ROW(attention_study_tokens_against_seq_len, "--tokens '1 5 7' --seq-len 5", 2,
                    "--tokens: the sequences have 3 tokens, but --seq-len is 5")
ATTENTION_STUDY_ROW(attention_study_metric_position_past_the_targets, "--tokens '1 5 7' --metric-position 2", 2,
                    "--metric-position: 2 is past the target positions of sequences of 3 tokens (0 to 1)")
ATTENTION_STUDY_ROW(attention_study_tokens_and_sequences, "--tokens '1 5 7' --sequences 2", 108,
                    "--sequences excludes --tokens")
ATTENTION_STUDY_ROW(attention_study_tokens_and_tokens_file, "--tokens '1 5 7' --tokens-file t.txt", 108,
                    "--tokens excludes --tokens-file")
ATTENTION_STUDY_ROW(attention_study_tokens_file_missing, "--tokens-file /no/such/tokens.txt", 2,
                    "--tokens-file '/no/such/tokens.txt': cannot be read (No such file or directory)")
ATTENTION_STUDY_ROW(attention_study_tokens_file_bad_line,
                    "--tokens-file " + write_scratch("tokens.txt", "1 2 3\n\n1 4 x\n").string(), 2,
                    "tokens.txt': sequence 1 (line 3), position 2: 'x' is not a token id")

}  // namespace
}  // namespace tapegrad::bad_inputs
