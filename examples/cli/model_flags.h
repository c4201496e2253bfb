#pragma once
// The flags both copy_task and attention_study take for the copy-task model they train, with the
// same checks in both: --d-model, --d-ff, --heads, --layers, --batch, --warmup, --seed, --threads.
// Defaults are the values config and threads hold when the flags are added.
#include <CLI/CLI.hpp>
#include <cstddef>

#include "nn/copy_task/copy_task.h"

namespace tapegrad::copy_task {

void add_model_flags(CLI::App& app, Config& config, std::size_t& threads);

// The checks across flags, once parsed: d_model divisible by heads. Throws examples::UsageError.
void check_model_flags(const Config& config);

}  // namespace tapegrad::copy_task
