#pragma once
// The copy-task circuit: which heads carry the copy, by exact activation patching and by every
// attribution method side by side (study/patching_comparison.h), which edges between them
// (edge_circuit.h), at which positions of the residual stream (position_sweep.h), and through which
// attention cells of the module whose heads carry most (cell_sweep.h).
//
// The clean run is the study batch; the corrupted run is copy_task::corrupt_sequences of it (every
// token after the start symbol replaced by another), through the whole model: source and the
// decoder's input. The metric is the mean logit difference, over the target positions, between
// the clean sequence's token and the corrupted one's (study::score_difference): large on the clean
// run, as negative on the corrupted one when the model copies. Each row patches one head's slice of
// one point (the head's output z, its queries q or its keys k) from the clean run into the
// corrupted one; the share of the gap it recovers, (patched - corrupted) / (clean - corrupted), is
// how much of the copy that head's slice carries.
#include <cstdint>
#include <string>
#include <vector>

#include "examples/attention_study/atp_diagnostic.h"
#include "examples/attention_study/cell_sweep.h"
#include "examples/attention_study/edge_circuit.h"
#include "examples/attention_study/position_sweep.h"
#include "examples/attention_study/study.h"
#include "examples/attention_study/tables.h"
#include "study/patching_comparison.h"

namespace tapegrad::attention_study {

struct CircuitStudy {
  double clean_metric = 0, corrupted_metric = 0;
  std::vector<std::string> row_names;  // per row of the comparison: "dec0 cross h2 z"
  study::PatchingComparison comparison;
  AtPDiagnostic atp_check;  // AtP*'s subset diagnostic of the AtP column (atp_diagnostic.h)
  EdgeCircuit edges;  // the same runs, edge by edge (edge_circuit.h)
  EdgeCircuit edges_per_head;  // and into each head's share of an attention input
  PositionSweep positions;  // position by position in the residual stream (position_sweep.h)
  CellSweep cells;  // and cell by cell in the module whose heads' z patches recover the most (cell_sweep.h)
  double recovered(double effect) const { return effect / (clean_metric - corrupted_metric); }
};

// The circuit study's two runs of its metric: the study batch `data` and its corruption, drawn
// from a generator seeded with `seed`. Each holds its own batch.
struct CopyRuns {
  study::RunLoss<float> clean, corrupted;
};
CopyRuns copy_runs(nn::transformer::Transformer<float>& model, const IndexArray& data, std::size_t vocab,
                   std::uint64_t seed);

// `names` gives the modules' short names (the study of the same model and batch); the runs are
// copy_runs' with `seed`. Puts the model in eval mode.
CircuitStudy circuit_study(nn::transformer::Transformer<float>& model, const IndexArray& data, std::size_t vocab,
                           std::uint64_t seed, const StudyResult& names);

// name, point, head, then per method (exact first) the share of the gap recovered; GradDrop's, an
// estimate of the magnitude, is |share|.
Table circuit_table(const CircuitStudy& circuit);
// method, seconds, Pearson, Spearman, top-k recall, k (exact patching first, its agreement blank).
Table method_agreement_table(const CircuitStudy& circuit);

}  // namespace tapegrad::attention_study
