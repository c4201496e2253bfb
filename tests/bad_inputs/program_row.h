#pragma once
// Rows of docs/bad-inputs.md for the example programs: each runs the program with bad flags and
// expects an exit status and message fragments (never a signal, never a run with nonsense
// settings). The outcome is "exit N" or "signal N" and what the program printed on stderr (its
// errors; its progress goes to stdout).
#include <string>

#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {

// Which of the program's streams an Outcome's message holds.
enum class Stream { kStderr, kStdout };

// Runs `program` with `args` (a shell word list), for at most 120 s; the message is what it printed
// on `stream` (its errors by default).
Outcome run_program(const std::string& program, const std::string& args, Stream stream = Stream::kStderr);

}  // namespace tapegrad::bad_inputs

// PROGRAM_ROW(Area, program, id, args, status, fragments...): TEST(BadInput<Area>, id) runs
// `program` (a path) with the args built by the expression `args` and expects exit status
// `status` and every fragment in the output; the row is registered for the table's sync test.
#define PROGRAM_ROW(area, program, id, args, status, ...)                                                      \
  static const bool bad_input_registered_##id = ::tapegrad::bad_inputs::register_row(                         \
      #id, [] { return ::tapegrad::bad_inputs::run_program(program, args); });                                 \
  TEST(BadInput##area, id) {                                                                                   \
    const ::tapegrad::bad_inputs::Outcome outcome = ::tapegrad::bad_inputs::run_program(program, args);        \
    EXPECT_EQ(outcome.kind, "exit " #status) << outcome.message;                                               \
    for (const char* fragment : {__VA_ARGS__})                                                                 \
      EXPECT_NE(outcome.message.find(fragment), std::string::npos) << "output lacks \"" << fragment << "\":\n" \
                                                                   << outcome.message;                         \
  }
