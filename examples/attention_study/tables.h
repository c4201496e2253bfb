#pragma once
// The gradient-norm and head-ablation tables of a study (see study.h for what each norm is), as rows of strings
// that go out as CSV (full precision), Markdown and HTML.
#include <string>
#include <vector>

#include "examples/attention_study/study.h"

namespace tapegrad::attention_study {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
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

// RFC 4180: cells holding a comma, quote or newline are quoted.
std::string to_csv(const Table& table);
std::string to_markdown(const Table& table);

}  // namespace tapegrad::attention_study
