#pragma once
// Writes a study into a directory, every file atomically:
//   index.html                 the page: one self-contained file (the data inside it, drawn by its
//                              own script; no network), page.h and report_data.h
//   grad_norms_heads.csv       per head: the gradient norms (tables.h)
//   grad_norms_modules.csv     per attention call: the norms of all its heads together
//   grad_norms_sublayers.csv   per sublayer: the norm of its parameters' gradient
//   head_ablation.csv          per (module, head): the loss with the head's A zeroed, and its change
//   grad_norms.md              the tables above in Markdown
//   circuit.csv, patching_methods.csv   with a circuit study (circuit.h): per head and point, the
//                              share of the gap each method says patching it recovers; per method,
//                              its agreement with exact patching and its time
//   edges.csv, edge_methods.csv   the same for every edge (edge_circuit.h): exact path patching,
//                              EAP and EAP-IG
//   positions.csv, positions_atp.csv   per residual-stream point and position, the share each
//                              patch recovers, exactly and by AtP (position_sweep.h)
//   cells.csv                  per attention cell (head, query, key) of the module whose heads carry
//                              most, the share each patch recovers, exactly and by AtP (cell_sweep.h);
//                              not written when the module has too many cells to sweep
#include <filesystem>
#include <string>
#include <vector>

#include "examples/attention_study/circuit.h"
#include "examples/attention_study/study.h"
#include "nn/copy_task/copy_task.h"
#include "study/attention_snapshot.h"

namespace tapegrad::attention_study {

struct RunInfo {
  copy_task::Config config;
  std::string source;          // how the model came to be, plain text (e.g. "trained for 300 steps")
  std::string batch_source;    // where the study batch came from: "random", "given by --tokens", ...
  std::vector<double> losses;  // training loss per step; empty when loaded from a checkpoint
  std::size_t steps = 0;       // the model's optimiser steps
  double accuracy = 0;         // exact-match accuracy of greedy decoding on fresh sequences
  std::size_t accuracy_sequences = 0;
};

// snapshots: A and dL/dA (and S, dL/dS, not put on the page) at training steps, recorded on the
// study batch (report_data.h says what must match); the page shows a slider over them when there
// are two or more. circuit: the patching study of the same model and batch, or null for none.
void write_report(const std::filesystem::path& dir, const RunInfo& run, const StudyResult& study,
                  const std::vector<study::AttentionSnapshot>& snapshots, const CircuitStudy* circuit = nullptr);

}  // namespace tapegrad::attention_study
