#include "nn/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "autograd/base/errors.h"

namespace tapegrad::nn {

namespace fs = std::filesystem;

namespace {

// A name no other call uses: the pid tells processes apart, the counter the calls of one process
// (threads saving one path at once each write their own temp file; the last rename wins, whole).
fs::path unique_temp_path(const fs::path& path) {
  static std::atomic<std::uint64_t> calls{0};
  return path.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(calls.fetch_add(1));
}

// The file a write to `path` replaces: through a symbolic link to the file it names, as open()
// would write, so that the link itself survives the rename.
fs::path replaced_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_symlink(path, ec) || !fs::exists(path, ec)) return path;
  fs::path target = fs::canonical(path, ec);
  return ec ? path : target;
}

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "a file of another kind";
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

void write_file_atomic(const fs::path& path, const std::vector<std::string_view>& chunks, std::string_view op) {
  const auto fail = [&](const std::string& problem) {
    throw ValueError(std::string(op) + "('" + path.string() + "'): " + problem + " (any previous file is unchanged)");
  };
  const fs::path target = replaced_file(path);
  struct stat previous {};
  const bool replacing = ::stat(target.c_str(), &previous) == 0;
  // The rename would put a regular file in the place of /dev/null, a FIFO, ...: only a regular file is replaced.
  if (replacing && !S_ISREG(previous.st_mode)) fail("it is " + file_kind(previous.st_mode) + ", not a regular file");
  // rename() would replace a file that open() may not write: a read-only file stays as it is.
  if (replacing && ((previous.st_mode & 0222) == 0 || ::access(target.c_str(), W_OK) != 0)) {
    fail("the file is read-only (mode " + octal_mode(previous.st_mode) + "); make it writable to save over it");
  }
  const fs::path temp = unique_temp_path(target);
  // O_EXCL: a file already there (left by a dead process whose pid came back) is not ours to truncate.
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create the temp file '" + temp.string() + "': " + std::strerror(errno));
  const auto abandon = [&](const std::string& what, int err, bool close_fd) {
    if (close_fd) ::close(fd);
    ::unlink(temp.c_str());
    fail(what + ": " + std::strerror(err));
  };
  // The new file keeps the old one's permissions (a private 0600 checkpoint stays private).
  if (replacing && ::fchmod(fd, previous.st_mode & 07777) != 0) {
    abandon("setting the permissions of '" + temp.string() + "' failed", errno, true);
  }
  for (std::string_view chunk : chunks) {
    while (!chunk.empty()) {
      const ssize_t written = ::write(fd, chunk.data(), chunk.size());
      if (written < 0 && errno == EINTR) continue;
      if (written < 0) abandon("writing '" + temp.string() + "' failed", errno, true);
      chunk.remove_prefix(static_cast<std::size_t>(written));
    }
  }
  if (::fsync(fd) != 0) abandon("fsync of '" + temp.string() + "' failed", errno, true);
  if (::close(fd) != 0) abandon("closing '" + temp.string() + "' failed", errno, false);
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) abandon("renaming '" + temp.string() + "' failed", ec.value(), false);
  // Make the rename itself durable; a directory that cannot be fsync'ed still holds the new file.
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace tapegrad::nn
