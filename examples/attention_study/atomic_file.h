#pragma once
// Whole-file writes that never leave a half-written file behind: the bytes go to
// "<path>.tmp-<pid>" in the same directory, are flushed, and the temp file is renamed over
// <path> (rename within one directory is atomic on POSIX). On failure the temp file is removed,
// any previous <path> is untouched, and std::runtime_error names the path and the OS error.
#include <filesystem>
#include <string_view>

namespace tapegrad::attention_study {

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

}  // namespace tapegrad::attention_study
