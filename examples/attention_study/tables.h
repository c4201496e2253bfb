#pragma once
// The gradient-norm and head-ablation tables of a study (see study.h for what each norm is), as rows of cells
// that go out as CSV (numbers in full: they read back as the same double), Markdown and the page (6 significant
// digits).
#include <string>
#include <variant>
#include <vector>

#include "examples/attention_study/study.h"

namespace tapegrad::attention_study {

// Text, or a number, which each output writes at its own precision.
using Cell = std::variant<std::string, double>;

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<Cell>> rows;
};

// The last column of each attention table is the head's (or module's) name as head_name gives it.
// module, head, |dL/dA|, |dL/dscores|, |dL/dW_q[h]|, |dL/dW_k[h]|, |dL/dW_v[h]|, name
Table head_norms_table(const StudyResult& study);
// module, heads, |dL/dA| and |dL/dscores| of all heads together (the root of the heads' squares), name
Table module_norms_table(const StudyResult& study);
// sublayer, parameters, |dL/dparameters|
Table sublayer_norms_table(const StudyResult& study);
// module, head, loss with the head ablated, change (ablated - clean), name
Table head_ablation_table(const StudyResult& study);

// RFC 4180: cells holding a comma, quote or newline are quoted; numbers with 17 significant digits.
std::string to_csv(const Table& table);
std::string to_markdown(const Table& table);
// A row as Markdown and the page show it: numbers with 6 significant digits.
std::vector<std::string> shown_cells(const std::vector<Cell>& row);

}  // namespace tapegrad::attention_study
