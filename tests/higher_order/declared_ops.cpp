#include "higher_order/declared_ops.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "autograd/ops/pointwise_table.h"

namespace tapegrad::testing {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text without comments, macro definitions and the bodies of `namespace detail { ... }`.
std::string declarations_of(const std::string& text) {
  std::string out;
  std::istringstream lines(text);
  bool in_macro = false;
  for (std::string line; std::getline(lines, line);) {
    const bool starts_macro = line.rfind("#define", 0) == 0;
    if (starts_macro || in_macro) {
      in_macro = !line.empty() && line.back() == '\\';
      continue;
    }
    out += line.substr(0, line.find("//")) + "\n";
  }
  for (std::size_t at; (at = out.find("namespace detail {")) != std::string::npos;) {
    std::size_t end = out.find('{', at) + 1;
    for (int depth = 1; depth > 0 && end < out.size(); ++end) depth += out[end] == '{' ? 1 : out[end] == '}' ? -1 : 0;
    out.erase(at, end - at);
  }
  return out;
}

}  // namespace

std::vector<std::string> ops_declared_in(const std::string& header_text) {
  const std::string text = declarations_of(header_text);
  std::vector<std::string> names;
  for (const std::string marker : {"CallSite ", "Tensor<"}) {
    for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
      // Back to the '(' that opens the parameter list holding the marker (none for a return
      // type), then the name before it.
      std::size_t open = at;
      for (int depth = 0; open-- > 0;) {
        if (text[open] == ')') ++depth;
        if (text[open] == '(' && depth-- == 0) break;
      }
      if (open == std::string::npos) continue;
      std::size_t end = open;
      while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
      std::size_t begin = end;
      while (begin > 0 && (std::isalnum(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '_')) --begin;
      const std::string name = text.substr(begin, end - begin);
      if (!name.empty() && std::islower(static_cast<unsigned char>(name[0])) &&
          std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
    }
  }
  return names;
}

#define TAPEGRAD_TABLE_ROW_NAME(name, ...) #name,
std::vector<DeclaredOp> declared_ops() {
  std::vector<DeclaredOp> ops;
  std::set<std::string> seen;
  const auto add = [&](const std::string& name, const std::string& family) {
    if (seen.insert(name).second) ops.push_back({name, family});
  };
  for (const char* name : {TAPEGRAD_UNARY_OPS(TAPEGRAD_TABLE_ROW_NAME) TAPEGRAD_BINARY_OPS(TAPEGRAD_TABLE_ROW_NAME)
                               TAPEGRAD_SCALAR_OPS(TAPEGRAD_TABLE_ROW_NAME)})
    add(name, "pointwise");
  const std::string all = read(std::string(TAPEGRAD_SOURCE_DIR) + "/autograd/ops/all.h");
  const std::regex include(R"(#include "autograd/ops/([a-z_]+)\.h")");
  for (std::sregex_iterator it(all.begin(), all.end(), include), end; it != end; ++it) {
    const std::string family = (*it)[1];
    for (const auto& name : ops_declared_in(read(std::string(TAPEGRAD_SOURCE_DIR) + "/autograd/ops/" + family + ".h")))
      add(name, family);
  }
  return ops;
}
#undef TAPEGRAD_TABLE_ROW_NAME

}  // namespace tapegrad::testing
