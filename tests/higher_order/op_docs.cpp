// docs/ops.md's op list and docs/bad-inputs.md's rows of the op specs' error inputs are written
// from the code: each test fails when its block differs from what the headers and the specs
// give, and rewrites the block when run with TAPEGRAD_WRITE_DOCS=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "higher_order/declared_ops.h"
#include "tests/bad_inputs/row.h"
#include "tests/ops/op_spec.h"

namespace tapegrad::testing {
namespace {

const char* const kRewrite = "TAPEGRAD_WRITE_DOCS=1 build/tests/test_higher_order --gtest_filter='OpDocs.*'";

// The block of `path` between the line starting with `begin` and the line `end` is `expected`;
// with TAPEGRAD_WRITE_DOCS set, it is made so.
::testing::AssertionResult block_is(const std::string& path, const std::string& begin, const std::string& end,
                                    const std::string& expected) {
  std::ifstream in(path);
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();
  const std::size_t open = text.find("\n" + begin);
  const std::size_t from = open == std::string::npos ? open : text.find('\n', open + 1) + 1;
  const std::size_t to = open == std::string::npos ? open : text.find("\n" + end + "\n", from - 1);
  if (to == std::string::npos)
    return ::testing::AssertionFailure() << path << " lacks the lines \"" << begin << "...\" and \"" << end << "\"";
  const std::string block = text.substr(from, to + 1 - from);
  if (block == expected) return ::testing::AssertionSuccess();
  if (std::getenv("TAPEGRAD_WRITE_DOCS")) {
    std::ofstream(path) << text.substr(0, from) + expected + text.substr(to + 1);
    return ::testing::AssertionSuccess() << "rewrote " << path;
  }
  return ::testing::AssertionFailure() << path << " is out of date; run " << kRewrite << "\nexpected:\n"
                                       << expected << "found:\n" << block;
}

std::string family_title(const std::string& family) {
  return family == "pointwise" ? "pointwise (one row each of `pointwise_table.h`)" : "`" + family + ".h`";
}

TEST(OpDocs, OpsListIsTheDeclaredOps) {
  std::map<std::string, std::string> remarks;
  for (const OpSpec& spec : op_specs()) {
    remarks[spec.name] = spec.remark;
    for (const auto& alias : spec.aliases) remarks[alias] = spec.name + "'s other name";
  }
  std::ostringstream list;
  std::string family;
  for (const auto& op : declared_ops()) {
    list << (op.family == family ? ", " : (family.empty() ? "" : "\n") + std::string("- ") + family_title(op.family) + ": ");
    family = op.family;
    list << op.name;
    if (!remarks[op.name].empty()) list << " (" << remarks[op.name] << ")";
  }
  list << "\n";
  EXPECT_TRUE(block_is(TAPEGRAD_OPS_DOC, "<!-- ops:", "<!-- end of ops -->", list.str()));
}

// One table row: the message column is what the call throws, its first line, with '|' escaped.
std::string row_of(const OpError& e) {
  const bad_inputs::Outcome outcome = bad_inputs::outcome_of(e.call);
  std::string message = outcome.message.substr(0, outcome.message.find('\n'));
  for (std::size_t at = 0; (at = message.find('|', at)) != std::string::npos; at += 2) message.insert(at, "\\");
  return "| `" + e.id + "` | " + e.entry_point + " | " + e.bad_input + " | `" + e.kind + "` | `" + message + "` |\n";
}

TEST(OpDocs, BadInputRowsAreTheSpecsErrorInputs) {
  std::string rows = "| id | entry point | bad input | exception | message (excerpt) |\n|---|---|---|---|---|\n";
  for (const OpSpec& spec : op_specs())
    for (const OpError& e : spec.errors) rows += row_of(e);
  EXPECT_TRUE(block_is(BAD_INPUTS_DOC, "<!-- op rows:", "<!-- end of op rows -->", rows));
}

}  // namespace
}  // namespace tapegrad::testing
