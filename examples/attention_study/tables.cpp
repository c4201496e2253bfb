#include "examples/attention_study/tables.h"

#include <cmath>
#include <cstdio>

#include "study/exact_text.h"

namespace tapegrad::attention_study {

namespace {

std::string shown_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (const char c : cell) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string as_is(const std::string& cell) { return cell; }

// The row's cells as text: numbers written by `number`, text by `text`.
std::vector<std::string> cells_as_text(const std::vector<Cell>& row, std::string (*number)(double),
                                       std::string (*text)(const std::string&)) {
  std::vector<std::string> out;
  for (const Cell& cell : row)
    out.push_back(std::holds_alternative<double>(cell) ? number(std::get<double>(cell)) : text(std::get<std::string>(cell)));
  return out;
}

std::string join_row(const std::vector<std::string>& cells, const std::string& open, const std::string& sep,
                     const std::string& close, std::string (*cell)(const std::string&)) {
  std::string out = open;
  for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? sep : "") + cell(cells[i]);
  return out + close;
}

// A '|' inside a Markdown table cell must be escaped or it splits the cell.
std::string markdown_cell(const std::string& cell) {
  std::string out;
  for (const char c : cell) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

Table head_norms_table(const StudyResult& study) {
  Table t{{"module", "head", "|dL/dA|", "|dL/dscores|", "|dL/dW_q[h]|", "|dL/dW_k[h]|", "|dL/dW_v[h]|", "name"},
          {}};
  for (const auto& h : study.heads) {
    t.rows.push_back({h.module, std::to_string(h.head), h.weights_grad, h.scores_grad, h.w_q, h.w_k,
                      h.w_v, head_name(h.short_name, h.head)});
  }
  return t;
}

Table module_norms_table(const StudyResult& study) {
  Table t{{"module", "heads", "|dL/dA|", "|dL/dscores|", "name"}, {}};
  for (const auto& maps : study.maps) {
    double weights_sq = 0, scores_sq = 0;
    std::size_t heads = 0;
    for (const auto& h : study.heads) {
      if (h.module != maps.module) continue;
      weights_sq += h.weights_grad * h.weights_grad;
      scores_sq += h.scores_grad * h.scores_grad;
      ++heads;
    }
    t.rows.push_back({maps.module, std::to_string(heads), std::sqrt(weights_sq), std::sqrt(scores_sq),
                      maps.short_name});
  }
  return t;
}

Table sublayer_norms_table(const StudyResult& study) {
  Table t{{"sublayer", "parameters", "|dL/dparameters|"}, {}};
  for (const auto& s : study.sublayers) t.rows.push_back({s.name, std::to_string(s.parameters), s.norm});
  return t;
}

Table head_ablation_table(const StudyResult& study) {
  Table t{{"module", "head", "loss ablated", "change", "name"}, {}};
  for (const auto& r : study.ablation.rows) {
    t.rows.push_back({r.module, std::to_string(r.head), r.loss, r.change,
                      head_name(study.short_name_of(r.module), r.head)});
  }
  return t;
}

std::string to_csv(const Table& table) {
  std::string out = join_row(table.header, "", ",", "\n", csv_cell);
  for (const auto& row : table.rows) out += join_row(cells_as_text(row, study::exact_text, csv_cell), "", ",", "\n", as_is);
  return out;
}

std::string to_markdown(const Table& table) {
  std::string out = join_row(table.header, "| ", " | ", " |\n", markdown_cell);
  out += "|";
  for (std::size_t i = 0; i < table.header.size(); ++i) out += i == 0 ? " --- |" : " ---: |";
  out += "\n";
  for (const auto& row : table.rows) out += join_row(shown_cells(row), "| ", " | ", " |\n", markdown_cell);
  return out;
}

std::vector<std::string> shown_cells(const std::vector<Cell>& row) { return cells_as_text(row, shown_number, as_is); }

}  // namespace tapegrad::attention_study
