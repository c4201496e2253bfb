#include "tests/support/python.h"

#include <sys/wait.h>

#include <cstdio>
#include <stdexcept>

namespace tapegrad::testing_support {

std::optional<std::string> run_python(const std::string& script, const std::string& arguments) {
  const std::string command = "/usr/bin/python3 " + script + (arguments.empty() ? "" : " " + arguments);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) return std::nullopt;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error(command + " failed:\n" + out);
  return out;
}

}  // namespace tapegrad::testing_support
