#pragma once
// Output paths are checked before a program starts its work, so that a long run does not end
// with nowhere to write its result. Both throw UsageError (program.h) naming the flag, the path
// and the reason. The check writes and removes a probe file: permission bits alone do not tell
// (root passes them; /proc and read-only mounts refuse anyway).
#include <filesystem>
#include <string>

namespace tapegrad::examples {

// A file the program writes (atomically: a temp file beside it, then a rename): its directory
// must exist and accept a new file, and the path must not be a directory.
void check_output_file(const std::string& flag, const std::filesystem::path& path);

// A directory the program creates when missing and writes into: the directory, or else its
// nearest existing ancestor, must be a directory that accepts a new file.
void check_output_directory(const std::string& flag, const std::filesystem::path& dir);

}  // namespace tapegrad::examples
