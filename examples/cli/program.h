#pragma once
// The outer layer of an example program: everything after parsing the flags runs inside
// run_guarded, so that no flag value and no failure ends the program with an abort or an
// uncaught exception, and every failure prints one line naming the program.
#include <functional>
#include <stdexcept>
#include <string>

namespace tapegrad::examples {

// A flag value found wrong after parsing: flags that contradict each other, an output path that
// cannot be written. Exit status 2 (CLI11's own parse errors have theirs, 100 and up).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs body and returns its exit status. An exception prints "<program>: <what>" on stderr and
// gives 2 for a UsageError, 1 for anything else; for std::bad_alloc the line says what was
// running (`running`, e.g. the model and batch sizes asked for), since bad_alloc names nothing.
int run_guarded(const std::string& program, const std::string& running, const std::function<int()>& body);

}  // namespace tapegrad::examples
