#pragma once
// docs/bad-inputs.md as data, and the checks that keep it and the row tests in step.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {

// One table row: | `id` | entry point | bad input | `kind` | `excerpt` |
struct TableRow {
  std::size_t line = 0;
  std::string id;
  std::string kind;     // the exception column without backticks, e.g. "ShapeError" or "exit 2"
  std::string excerpt;  // the message column without backticks; " … " separates pieces
  std::vector<std::string> entry_points;  // the entry point column's backticked names, each up to '(' or ' '
  bool generated = false;  // between "<!-- op rows:" and "<!-- end of op rows -->": the op specs' (test_higher_order)
};

// Every row of every table whose first cell is a backticked id; ValueError-free: a malformed
// row (wrong cell count) is returned with an empty id so the check reports it.
std::vector<TableRow> read_table(const std::filesystem::path& path);

// Every disagreement between the table, the registered row tests (gtest names in the BadInput*
// suites) and what each row's call really does; empty when they agree. A message excerpt must
// appear in the message, its pieces (separated by "…", spaces around them ignored) in order.
std::vector<std::string> table_problems(const std::vector<TableRow>& table, const std::set<std::string>& test_names,
                                        const std::map<std::string, Outcome>& outcomes);

}  // namespace tapegrad::bad_inputs
