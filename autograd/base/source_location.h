#pragma once
// std::source_location, also where the standard library's is missing: clang 14 with libstdc++ 12
// (the fuzzing build, tests/run-fuzzers) gets an empty <source_location>, because libstdc++ needs
// __builtin_source_location, which clang has only from version 15. There a stand-in with the same
// interface is built on __builtin_FILE / __builtin_LINE / __builtin_FUNCTION, which clang
// evaluates at the call site when used as default arguments. g++ 12 uses the real one.
#include <cstdint>
#include <source_location>

#if !defined(__cpp_lib_source_location)
namespace std {  // NOLINT: fills a gap of this standard library, only when it has none
struct source_location {
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           std::uint_least32_t line = __builtin_LINE()) noexcept {
    source_location where;
    where.file_ = file;
    where.function_ = function;
    where.line_ = line;
    return where;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return 0; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
};
}  // namespace std
#endif
