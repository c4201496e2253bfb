// docs/bad-inputs.md and the row tests (tests/bad_inputs/*_rows.cpp) agree: every row has its
// test, every test its row, and each row's exception and message excerpt are what its call gives.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/bad_inputs/table.h"

namespace tapegrad::bad_inputs {
namespace {

// Names of the registered tests in the BadInput<Area> suites (the row tests), by reflection.
// A name registered in two suites is reported in `repeated`.
std::set<std::string> row_test_names(std::vector<std::string>* repeated = nullptr) {
  std::set<std::string> names;
  const auto& unit = *::testing::UnitTest::GetInstance();
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const auto& suite = *unit.GetTestSuite(s);
    if (std::string(suite.name()).rfind("BadInput", 0) != 0) continue;
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const char* name = suite.GetTestInfo(t)->name();
      if (!names.insert(name).second && repeated)
        repeated->push_back("row test name '" + std::string(name) + "' is used twice");
    }
  }
  return names;
}

std::map<std::string, Outcome> run_every_row() {
  std::map<std::string, Outcome> outcomes;
  for (const auto& [id, fn] : rows()) outcomes[id] = fn();
  return outcomes;
}

std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "\n";
  return out;
}

TEST(DocsBadInputs, TableAndRowTestsAgree) {
  auto table = read_table(BAD_INPUTS_DOC);
  // The op specs' rows: test_higher_order writes and tests them (higher_order/op_docs.cpp).
  std::erase_if(table, [](const TableRow& row) { return row.generated; });
#ifndef COPY_TASK_EXE
  // Built without the examples: there is no copy_task program to run its rows against.
  std::erase_if(table, [](const TableRow& row) { return row.id.rfind("copy_task_", 0) == 0; });
  std::cout << "copy_task rows not checked: built without TAPEGRAD_BUILD_EXAMPLES\n";
#endif
  EXPECT_GT(table.size(), 100u) << "read too few rows from " << BAD_INPUTS_DOC;
  std::vector<std::string> repeated;
  const auto names = row_test_names(&repeated);
  EXPECT_TRUE(repeated.empty()) << joined(repeated);
  const auto problems = table_problems(table, names, run_every_row());
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

// Every registered row function belongs to a gtest of the same name (the macro makes both).
TEST(DocsBadInputs, EveryRegisteredRowIsATest) {
  const auto names = row_test_names();
  for (const auto& [id, fn] : rows()) EXPECT_TRUE(names.count(id)) << id;
}

// The check itself can fail: a table with a missing test, an unknown test, a wrong exception and
// a wrong excerpt reports each of them.
TEST(DocsBadInputs, CheckReportsEveryKindOfDisagreement) {
  const std::vector<TableRow> table = {{1, "a", "ValueError", "bad \u2026 axis", {}},
                                       {2, "b", "ShapeError", "shape", {}},
                                       {3, "c", "ValueError", "axis \u2026 bad", {}},
                                       {4, "a", "ValueError", "bad", {}},
                                       {5, "", "", "| `x` | y |", {}}};
  const std::set<std::string> tests = {"a", "b", "c", "d"};
  const std::map<std::string, Outcome> outcomes = {
      {"a", {"ValueError", "a bad axis"}}, {"b", {"ValueError", "wrong shape"}}, {"c", {"ValueError", "a bad axis"}}};
  const auto problems = joined(table_problems(table, tests, outcomes));
  EXPECT_EQ(problems.find("line 1:"), std::string::npos) << problems;  // pieces in order: fine
  EXPECT_NE(problems.find("line 2: row 'b' says ShapeError but the call gives ValueError"), std::string::npos)
      << problems;
  EXPECT_NE(problems.find("line 3: row 'c': excerpt"), std::string::npos) << problems;  // pieces out of order
  EXPECT_NE(problems.find("line 4: row id 'a' appears twice"), std::string::npos) << problems;
  EXPECT_NE(problems.find("line 5: not a 5-cell row"), std::string::npos) << problems;
  EXPECT_NE(problems.find("test 'd' has no row"), std::string::npos) << problems;
  const auto missing = joined(table_problems({{7, "e", "ValueError", "x", {}}}, tests, outcomes));
  EXPECT_NE(missing.find("row 'e' has no registered test"), std::string::npos) << missing;
}

}  // namespace
}  // namespace tapegrad::bad_inputs
