#include "examples/cli/output_path.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "examples/cli/program.h"

namespace tapegrad::examples {

namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& path) {
  std::string text = path.string();  // not "'" + text + "'": a false -Wrestrict from gcc 12
  text.insert(text.begin(), '\'');
  return text + '\'';
}

[[noreturn]] void refuse(const std::string& flag, const fs::path& path, const std::string& why) {
  throw UsageError(flag + " " + quoted(path) + ": " + why + " (output paths are checked before the run starts)");
}

// The file status of path; a failure other than "does not exist" (a parent without search
// permission, a loop of links) is reported rather than taken for a missing path.
fs::file_status status_of(const std::string& flag, const fs::path& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error && status.type() != fs::file_type::not_found) refuse(flag, path, error.message());
  return status;
}

// dir exists; it must be a directory in which a file can be created.
void require_writable_directory(const std::string& flag, const fs::path& shown, const fs::path& dir) {
  if (!fs::is_directory(status_of(flag, dir))) refuse(flag, shown, quoted(dir) + " is not a directory");
  std::string probe = (dir / ".tapegrad-write-check-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) refuse(flag, shown, "cannot create a file in " + quoted(dir) + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

fs::path directory_of(const fs::path& path) { return path.has_parent_path() ? path.parent_path() : fs::path("."); }

}  // namespace

void check_output_file(const std::string& flag, const fs::path& path) {
  if (path.empty()) refuse(flag, path, "the path is empty");
  if (fs::is_directory(status_of(flag, path))) refuse(flag, path, "is a directory, not a file");
  const fs::path dir = directory_of(path);
  if (!fs::exists(status_of(flag, dir))) refuse(flag, path, "the directory " + quoted(dir) + " does not exist");
  require_writable_directory(flag, path, dir);
}

void check_output_directory(const std::string& flag, const fs::path& dir) {
  if (dir.empty()) refuse(flag, dir, "the path is empty");
  fs::path existing = dir;
  while (!fs::exists(status_of(flag, existing))) {
    const fs::path up = directory_of(existing);
    if (up == existing) refuse(flag, dir, "no part of the path exists");  // "." itself is gone
    existing = up;
  }
  require_writable_directory(flag, dir, existing);
}

}  // namespace tapegrad::examples
