#pragma once
// CallSite: where an op was called from, for anomaly reports (autograd/core/anomaly.h). Every op takes
// a trailing `CallSite where = std::source_location::current()`; a default argument is evaluated
// at each call, so it holds the caller's file and line. A wrapper rather than std::source_location
// itself because std::source_location is constructible from `{}`, which would make `sum(x, {})`
// (an empty axis list) ambiguous with `sum(x, where)`; CallSite has no default constructor.
#include <string>

#include "autograd/base/source_location.h"

namespace tapegrad {

struct CallSite {
  CallSite(std::source_location where) : where(where) {}  // NOLINT: implicit on purpose
  operator std::source_location() const { return where; }
  std::source_location where;
};

// "cube (called at train.cpp:42)": how an op and its call site are named in messages (anomaly
// reports, in-place write errors, gradcheck's report).
inline std::string describe_call(const char* op, const std::source_location& where) {
  return std::string(op) + " (called at " + where.file_name() + ":" + std::to_string(where.line()) + ")";
}

}  // namespace tapegrad
