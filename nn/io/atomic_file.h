#pragma once
// Whole-file writes that never leave a half-written file behind: the bytes go to
// "<path>.tmp-<pid>-<n>" in the same directory (n counts this process's calls, so concurrent
// saves of one path never share a temp file), are flushed and fsync'ed, and the temp file is renamed
// over <path> (rename within one directory is atomic on POSIX). On failure the temp file is
// removed (never a file this call did not create), any previous <path> is untouched, and
// ValueError names `op`, the path and the OS error: "save_npy('out/a.npy'): cannot create ...".
// It writes as open() would, where rename() alone would differ: a symbolic link to a file is
// followed (the file it names is replaced, the link stays); the new file keeps the permissions of
// the one it replaces; a read-only file (no write bit, or not writable by this process) and
// anything but a regular file (a directory, /dev/null, a FIFO) are not replaced (ValueError).
// Checkpoints, exports and the example programs' pages all write through it.
#include <filesystem>
#include <string_view>
#include <vector>

namespace tapegrad::nn {

// Writes the chunks, in order, as the file's contents.
void write_file_atomic(const std::filesystem::path& path, const std::vector<std::string_view>& chunks,
                       std::string_view op = "write_file_atomic");

inline void write_file_atomic(const std::filesystem::path& path, std::string_view bytes,
                              std::string_view op = "write_file_atomic") {
  write_file_atomic(path, std::vector<std::string_view>{bytes}, op);
}

}  // namespace tapegrad::nn
