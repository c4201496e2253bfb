#pragma once
// The study batch a user chose instead of random sequences: --tokens "1 5 7 3; 1 9 2 4" (sequences
// separated by ';') or --tokens-file PATH (one sequence per line); tokens are separated by white
// space, and empty sequences (a blank line, ";;") are skipped. Every sequence must be a copy-task
// sequence: the start symbol, then tokens in [2, vocab). The padding symbol is refused too,
// although the masks would hide it: the study's metric averages over every target position, the
// circuit study corrupts every token after the start, and the copy-task model never saw padding.
// All sequences have one length, from 2 to copy_task::kMaxSeqLen tokens, and there are at most
// kMaxStudySequences of them. A refusal is an examples::UsageError naming the flag, the sequence
// (0-based, as the page and the exports number them; and the line, for a file), the position in
// it and the token as written.
#include <cstddef>
#include <filesystem>
#include <string_view>

#include "autograd/core/tensor.h"

namespace tapegrad::attention_study {

// The most sequences the study takes, random (--sequences) or given.
inline constexpr std::size_t kMaxStudySequences = 16;

// --tokens' text: [sequences, seq_len].
IndexArray parse_study_tokens(std::string_view text, std::size_t vocab);

// --tokens-file's contents: [sequences, seq_len]; also a UsageError when the file cannot be read.
IndexArray read_study_tokens_file(const std::filesystem::path& path, std::size_t vocab);

}  // namespace tapegrad::attention_study
