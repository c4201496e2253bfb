#include "tests/bad_inputs/table.h"

#include <fstream>

namespace tapegrad::bad_inputs {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  const auto e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "`x`" -> "x"; anything else unchanged (so a missing backtick shows up as a mismatch).
std::string unquote(const std::string& cell) {
  if (cell.size() >= 2 && cell.front() == '`' && cell.back() == '`') return cell.substr(1, cell.size() - 2);
  return cell;
}

// "`div_floor`, `div(a, b, RoundingMode::floor)`" -> {"div_floor", "div"}.
std::vector<std::string> entry_points_of(const std::string& cell) {
  std::vector<std::string> names;
  for (std::size_t open = cell.find('`'); open != std::string::npos; open = cell.find('`', open)) {
    const std::size_t close = cell.find('`', open + 1);
    if (close == std::string::npos) break;
    const std::string quoted = cell.substr(open + 1, close - open - 1);
    names.push_back(quoted.substr(0, quoted.find_first_of("( ")));
    open = close + 1;
  }
  return names;
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t start = 1;  // past the leading '|'
  for (std::size_t bar; (bar = line.find('|', start)) != std::string::npos; start = bar + 1) {
    cells.push_back(trim(line.substr(start, bar - start)));
  }
  return cells;
}

bool contains_in_order(const std::string& message, const std::string& excerpt) {
  static const std::string ellipsis = "\u2026";
  std::size_t from = 0;
  for (std::size_t start = 0; start <= excerpt.size();) {
    const std::size_t end = std::min(excerpt.find(ellipsis, start), excerpt.size());
    const std::string piece = trim(excerpt.substr(start, end - start));
    start = end + ellipsis.size();
    if (piece.empty()) continue;
    const std::size_t at = message.find(piece, from);
    if (at == std::string::npos) return false;
    from = at + piece.size();
  }
  return true;
}

}  // namespace

std::vector<TableRow> read_table(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return {TableRow{0, "", "", "cannot open " + path.string(), {}}};
  std::vector<TableRow> rows;
  std::string line;
  bool generated = false;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.rfind("<!-- op rows:", 0) == 0) generated = true;
    if (line == "<!-- end of op rows -->") generated = false;
    if (line.rfind("| `", 0) != 0) continue;
    const auto cells = cells_of(line);
    if (cells.size() != 5) {
      rows.push_back({number, "", "", line, {}, generated});
      continue;
    }
    rows.push_back({number, unquote(cells[0]), unquote(cells[3]), unquote(cells[4]), entry_points_of(cells[1]), generated});
  }
  return rows;
}

std::vector<std::string> table_problems(const std::vector<TableRow>& table, const std::set<std::string>& test_names,
                                        const std::map<std::string, Outcome>& outcomes) {
  std::vector<std::string> problems;
  std::set<std::string> ids;
  for (const auto& row : table) {
    const std::string where = "line " + std::to_string(row.line) + ": ";
    if (row.id.empty()) {
      problems.push_back(where + "not a 5-cell row: " + row.excerpt);
      continue;
    }
    if (!ids.insert(row.id).second) problems.push_back(where + "row id '" + row.id + "' appears twice");
    if (!test_names.count(row.id)) problems.push_back(where + "row '" + row.id + "' has no registered test");
    const auto outcome = outcomes.find(row.id);
    if (outcome == outcomes.end()) continue;
    if (outcome->second.kind != row.kind) {
      problems.push_back(where + "row '" + row.id + "' says " + row.kind + " but the call gives " +
                         outcome->second.kind + ": " + outcome->second.message);
    }
    if (!contains_in_order(outcome->second.message, row.excerpt)) {
      problems.push_back(where + "row '" + row.id + "': excerpt \"" + row.excerpt + "\" is not in the message \"" +
                         outcome->second.message + "\"");
    }
  }
  for (const auto& name : test_names) {
    if (ids.count(name)) continue;
    std::string problem = "test '" + name + "' has no row in the table";
    const auto outcome = outcomes.find(name);
    if (outcome != outcomes.end()) {  // a row to start from: the entry point and bad input are to write
      const std::string& message = outcome->second.message;
      problem += "; it gives | `" + name + "` |  |  | `" + outcome->second.kind + "` | `" +
                 message.substr(0, message.find('\n')) + "` |";
    }
    problems.push_back(problem);
  }
  return problems;
}

}  // namespace tapegrad::bad_inputs
