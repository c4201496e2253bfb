#pragma once
// The ops still awaiting an op spec (op_coverage.cpp), by name, with their docs/ops.md remarks.
#include <map>
#include <string>

namespace tapegrad::testing {

const std::map<std::string, std::string>& awaiting_spec();

}  // namespace tapegrad::testing
