#pragma once
// Writes a study into a directory, every file atomically:
//   index.html                        every picture on one page, with captions (relative links)
//   maps/<module>_h<H>_s<B>_weights.png   attention weights A of head H on sequence B (viridis)
//   maps/<module>_h<H>_s<B>_grad.png      dL/dA of the same map (blue-white-red, symmetric)
//                                     <module> is enc<L>_self, dec<L>_self or dec<L>_cross
//   maps.csv                          one row per map image: file, what it shows, its grid
//                                     geometry in pixels and its colour range
//   grad_norms_heads.png / .csv       the gradient norm reaching each head (bar chart, table)
//   grad_norms_sublayers.png / .csv   the gradient norm of each sublayer's parameters
//   grad_norms.md                     the three gradient-norm tables and the head ablation in Markdown
//   head_ablation.csv                 per (module, head): the loss with the head's A zeroed, and its change
//   loss.png                          the training loss per step (only when the run trained)
#include <filesystem>
#include <string>
#include <vector>

#include "examples/attention_study/study.h"
#include "examples/copy_task/copy_task.h"

namespace tapegrad::attention_study {

struct RunInfo {
  copy_task::Config config;
  std::string source;          // how the model came to be, plain text (e.g. "trained for 300 steps")
  std::vector<double> losses;  // training loss per step; empty when loaded from a checkpoint
  std::size_t steps = 0;       // the model's optimiser steps
  double accuracy = 0;         // exact-match accuracy of greedy decoding on fresh sequences
  std::size_t accuracy_sequences = 0;
  int cell = 32;  // heatmap pixels per (query, key) cell
};

void write_report(const std::filesystem::path& dir, const RunInfo& run, const StudyResult& study);

}  // namespace tapegrad::attention_study
