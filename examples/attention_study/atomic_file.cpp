#include "examples/attention_study/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tapegrad::attention_study {

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  const std::filesystem::path temp = path.string() + ".tmp-" + std::to_string(::getpid());
  const auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw std::runtime_error("write_file_atomic('" + path.string() + "'): " + what + ": " + reason);
  };
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) fail("cannot create " + temp.string());
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool synced = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  if (std::fclose(f) != 0 || !written || !synced) fail("cannot write " + temp.string());
  if (std::rename(temp.c_str(), path.c_str()) != 0) fail("cannot rename " + temp.string());
}

}  // namespace tapegrad::attention_study
