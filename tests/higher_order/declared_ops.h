#pragma once
// The ops autograd/ops/all.h declares, read from its headers: every function outside a detail
// namespace that takes a CallSite (CONTRIBUTING.md: every recorded op's last parameter) or a
// tensor (argmax, which records nothing), and the rows of the pointwise table, whose declarations
// a macro writes.
#include <string>
#include <vector>

namespace tapegrad::testing {

struct DeclaredOp {
  std::string name;
  std::string family;  // its header in autograd/ops/, without .h ("pointwise" for a table row)
};

// In the order all.h includes the headers, each op once (at its first declaration).
std::vector<DeclaredOp> declared_ops();

// The names of the functions taking a CallSite or a tensor in `header_text` (a header's contents).
std::vector<std::string> ops_declared_in(const std::string& header_text);

}  // namespace tapegrad::testing
