#pragma once
// One row of docs/bad-inputs.md = one gtest. BAD_INPUT_ROW(Area, row_id, Exception, (call), fragments...)
// defines TEST(BadInput<Area>, row_id), which asserts that `call` throws `Exception` whose
// message holds every fragment (testing::throws_with), and registers the row so the sync test
// (test_bad_inputs.cpp) can check the table's exception column and message excerpt against what
// the call really throws. `call` is one expression in parentheses (commas inside are fine); a
// row that needs statements wraps them in an immediately called lambda.
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "tests/support/reference.h"

namespace tapegrad::bad_inputs {

// What a row's call did: kind is the dynamic exception type ("ShapeError", "std::out_of_range"),
// "exit N" / "signal N" for a program run, or "no error"; message is what() or the output.
struct Outcome {
  std::string kind;
  std::string message;
};
using RowFunction = std::function<Outcome()>;

// Every row defined by BAD_INPUT_ROW / a program row, by row id.
std::map<std::string, RowFunction>& rows();
bool register_row(const char* id, RowFunction fn);

// The exception's dynamic type without the "tapegrad::" namespace, e.g. "ValueError".
std::string type_name(const std::exception& e);

// A path in this process's scratch folder (rows run in parallel processes under ctest), which is
// removed when the process exits; write_scratch also writes `bytes` there.
std::filesystem::path scratch(const std::string& name);
std::filesystem::path write_scratch(const std::string& name, const std::string& bytes);

// Ends a death test's child: exit 0 when `result` holds, else its message on stderr and exit 1.
[[noreturn]] void exit_with(const ::testing::AssertionResult& result);

template <class Fn>
Outcome outcome_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return {type_name(e), e.what()};
  }
  return {"no error", ""};
}

}  // namespace tapegrad::bad_inputs

// BAD_INPUT_CRASH_ROW: the same for an input that once crashed the process (segfault, abort,
// SIGFPE). The test body runs the call in a child process (a GoogleTest death test), so a
// regression fails this one test with the signal instead of taking the whole suite down.
#define BAD_INPUT_CRASH_ROW(area, id, Exception, call, ...)                                       \
  static const bool bad_input_registered_##id = ::tapegrad::bad_inputs::register_row(             \
      #id, [] { return ::tapegrad::bad_inputs::outcome_of([] { (void)call; }); });                \
  TEST(BadInput##area, id) {                                                                      \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                                               \
    EXPECT_EXIT(::tapegrad::bad_inputs::exit_with(                                                \
                    ::tapegrad::testing::throws_with<Exception>([] { (void)call; }, {__VA_ARGS__})), \
                ::testing::ExitedWithCode(0), "");                                                \
  }

#define BAD_INPUT_ROW(area, id, Exception, call, ...)                                            \
  static const bool bad_input_registered_##id = ::tapegrad::bad_inputs::register_row(            \
      #id, [] { return ::tapegrad::bad_inputs::outcome_of([] { (void)call; }); });               \
  TEST(BadInput##area, id) {                                                                     \
    EXPECT_TRUE(::tapegrad::testing::throws_with<Exception>([] { (void)call; }, {__VA_ARGS__})); \
  }
