// Every public op is covered: docs/ops.md names every op (the pointwise table's rows
// included), and each op listed there has cases in the registry (so gradcheck, gradgradcheck,
// float32 and thread checks run on it) and rows in docs/bad-inputs.md (so its bad inputs are
// tested; test_pointwise tests those of every pointwise table row). An op missing from either is
// reported by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "autograd/ops/pointwise_table.h"
#include "higher_order/op_case.h"
#include "tests/bad_inputs/table.h"

namespace tapegrad::testing {
namespace {

// Ops with no registry case, and why (their own tests cover them).
const std::map<std::string, std::string> not_differentiable = {
    {"argmax", "returns int64 positions, no gradient (tests/test_argmax.cpp)"},
    {"argmin", "returns int64 positions, no gradient (tests/test_argmax.cpp)"},
};

// The op names of docs/ops.md's line "ops: ...", parenthesised remarks left out.
std::vector<std::string> listed_ops() {
  std::ifstream in(TAPEGRAD_OPS_DOC);
  std::string line;
  while (std::getline(in, line) && line.rfind("ops:", 0) != 0) {
  }
  const std::size_t ops = line.find("ops:");
  if (ops == std::string::npos) return {};
  const std::string listed = std::regex_replace(line.substr(ops + 4), std::regex(R"(\([^)]*\))"), " ");
  std::vector<std::string> names;
  const std::regex word(R"([a-z][a-z0-9_]*)");
  for (std::sregex_iterator it(listed.begin(), listed.end(), word), end; it != end; ++it) names.push_back(it->str());
  return names;
}

#define TAPEGRAD_OP_NAME(name, ...) #name,
const std::vector<std::string> table_ops = {TAPEGRAD_UNARY_OPS(TAPEGRAD_OP_NAME) TAPEGRAD_BINARY_OPS(TAPEGRAD_OP_NAME)};
#undef TAPEGRAD_OP_NAME

// A case covers op when its name is the op, or the op is one of its underscore-separated parts
// at a word boundary: "max_axes", "unsqueeze_squeeze" and "transpose_squeeze_index_select_0d"
// cover max, squeeze and index_select; "maximum_same" does not cover max.
bool covers(const std::string& case_name, const std::string& op) {
  const std::string padded = "_" + case_name + "_";
  return padded.find("_" + op + "_") != std::string::npos;
}

TEST(OpCoverage, OpsDocListsEveryPointwiseTableOp) {
  const auto listed = listed_ops();
  ASSERT_GT(listed.size(), 40u) << "read too few ops from the line \"ops: ...\" of " << TAPEGRAD_OPS_DOC;
  const std::set<std::string> names(listed.begin(), listed.end());
  for (const auto& op : table_ops) EXPECT_TRUE(names.count(op)) << op << " is in pointwise_table.h but not in docs/ops.md";
}

TEST(OpCoverage, EveryListedOpHasRegistryCases) {
  const auto cases = op_cases();
  for (const auto& op : listed_ops()) {
    if (not_differentiable.count(op)) continue;
    const bool covered = std::any_of(cases.begin(), cases.end(), [&](const OpCase& c) { return covers(c.name, op); });
    EXPECT_TRUE(covered) << op << " has no case in the registry (tests/higher_order/*_cases.cpp)";
  }
}

TEST(OpCoverage, EveryListedOpHasBadInputRows) {
  std::set<std::string> entry_points;
  for (const auto& row : bad_inputs::read_table(BAD_INPUTS_DOC))
    entry_points.insert(row.entry_points.begin(), row.entry_points.end());
  const std::set<std::string> table(table_ops.begin(), table_ops.end());
  for (const auto& op : listed_ops()) {
    if (table.count(op)) continue;  // test_pointwise gives every table row its bad inputs
    EXPECT_TRUE(entry_points.count(op)) << op << " has no row in " << BAD_INPUTS_DOC;
  }
}

TEST(OpCoverage, CoversMatchesWholeParts) {
  EXPECT_TRUE(covers("max", "max"));
  EXPECT_TRUE(covers("max_axes", "max"));
  EXPECT_TRUE(covers("unsqueeze_squeeze", "squeeze"));
  EXPECT_TRUE(covers("transpose_squeeze_index_select_0d", "index_select"));
  EXPECT_FALSE(covers("maximum_same", "max"));
  EXPECT_FALSE(covers("unsqueeze_x", "squeeze"));
}

}  // namespace
}  // namespace tapegrad::testing
