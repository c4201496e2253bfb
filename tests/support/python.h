#pragma once
// Runs a Python script of the test suite with /usr/bin/python3 (where python3-torch is installed)
// and returns what it printed. The scripts exit 77 when torch is missing: nullopt then, so a
// test can skip; any other failure throws std::runtime_error with the command and its output.
#include <optional>
#include <string>

namespace tapegrad::testing_support {

// `arguments` is passed to the shell as written (quote paths yourself).
std::optional<std::string> run_python(const std::string& script, const std::string& arguments = "");

}  // namespace tapegrad::testing_support
