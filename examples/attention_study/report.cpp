#include "examples/attention_study/report.h"

#include "examples/attention_study/format.h"
#include "examples/attention_study/page.h"
#include "examples/attention_study/report_data.h"
#include "examples/attention_study/tables.h"
#include "nn/io/atomic_file.h"

namespace tapegrad::attention_study {

using nn::write_file_atomic;

void write_report(const std::filesystem::path& dir, const RunInfo& run, const StudyResult& study,
                  const std::vector<study::AttentionSnapshot>& snapshots, const CircuitStudy* circuit) {
  // The page first: its data check the snapshots before any file is written.
  const std::string page = render_page(report_json(run, study, snapshots, circuit));
  std::filesystem::create_directories(dir);
  const Table heads = head_norms_table(study), modules = module_norms_table(study),
              sublayers = sublayer_norms_table(study), ablation = head_ablation_table(study);
  write_file_atomic(dir / "head_ablation.csv", to_csv(ablation));
  write_file_atomic(dir / "grad_norms_heads.csv", to_csv(heads));
  write_file_atomic(dir / "grad_norms_modules.csv", to_csv(modules));
  write_file_atomic(dir / "grad_norms_sublayers.csv", to_csv(sublayers));
  write_file_atomic(dir / "grad_norms.md", "# Gradient norms\n\nLoss on the study batch: " + short_number(study.loss) +
                                               "\n\n## Per head\n\n" + to_markdown(heads) +
                                               "\n## Per attention module\n\n" + to_markdown(modules) +
                                               "\n## Per sublayer (parameters)\n\n" + to_markdown(sublayers) +
                                               "\n## Head ablation (A of the head := 0)\n\n" + to_markdown(ablation));
  if (circuit) {
    write_file_atomic(dir / "circuit.csv", to_csv(circuit_table(*circuit)));
    write_file_atomic(dir / "patching_methods.csv", to_csv(method_agreement_table(*circuit)));
    write_file_atomic(dir / "edges.csv", to_csv(edge_table(circuit->edges, circuit->clean_metric - circuit->corrupted_metric)));
    write_file_atomic(dir / "edge_methods.csv", to_csv(edge_method_table(circuit->edges)));
    const double gap = circuit->clean_metric - circuit->corrupted_metric;
    write_file_atomic(dir / "edges_per_head.csv", to_csv(edge_table(circuit->edges_per_head, gap)));
    write_file_atomic(dir / "atp_diagnostic.csv",
                      to_csv(atp_diagnostic_table(circuit->atp_check, circuit->comparison, circuit->row_names, gap)));
    write_file_atomic(dir / "edge_methods_per_head.csv", to_csv(edge_method_table(circuit->edges_per_head)));
    write_file_atomic(dir / "positions.csv", to_csv(position_table(circuit->positions, gap, false)));
    write_file_atomic(dir / "positions_atp.csv", to_csv(position_table(circuit->positions, gap, true)));
    if (circuit->cells.swept) write_file_atomic(dir / "cells.csv", to_csv(cell_table(circuit->cells)));
  }
  write_file_atomic(dir / "index.html", page);
}

}  // namespace tapegrad::attention_study
