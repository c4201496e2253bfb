#pragma once
// The flags both copy_task and attention_study take for the copy-task model they train, with the
// same checks in both: --d-model, --d-ff, --heads, --layers, --seq-len, --batch, --warmup, --seed,
// --threads. Defaults are the values config and threads hold when the flags are added.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <optional>
#include <string>

#include "nn/copy_task/copy_task.h"

namespace tapegrad::copy_task {

// The longest --seq-len: the attention study's page labels are tested up to this length.
inline constexpr std::size_t kMaxSeqLen = 64;

void add_model_flags(CLI::App& app, Config& config, std::size_t& threads);

// The checks across flags, once parsed: d_model divisible by heads. Throws examples::UsageError.
void check_model_flags(const Config& config);

// After Trainer::load: prints "<program>: warning: ..." on stderr, naming both lengths, when the
// checkpoint was trained at another sequence length (trained_seq_len, what load returned) than
// --seq-len. A checkpoint that does not record it (nullopt) loads silently, as before.
void warn_if_trained_at_another_seq_len(const std::string& program, const std::string& checkpoint,
                                        std::optional<std::size_t> trained_seq_len, const Config& config);

}  // namespace tapegrad::copy_task
