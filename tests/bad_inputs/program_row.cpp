#include "tests/bad_inputs/program_row.h"

#include <sys/wait.h>

#include <cstdio>

namespace tapegrad::bad_inputs {

Outcome run_program(const std::string& program, const std::string& args, Stream stream) {
  // A bad value the program takes for a real one can mean a run of 2^64 epochs: the time limit
  // turns that into a failed row ("exit 124") instead of a hung suite.
  const std::string command =
      "timeout 120 " + program + " " + args + (stream == Stream::kStderr ? " 2>&1 >/dev/null" : " 2>/dev/null");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"popen failed", command};
  std::string output;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) return {"exit " + std::to_string(WEXITSTATUS(status)), output};
  return {"signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : -1), output};
}

}  // namespace tapegrad::bad_inputs
