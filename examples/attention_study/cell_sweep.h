#pragma once
// Which attention cells carry the copy: every cell (head, query, key) of one attention module's
// pattern A patched from the clean run into the corrupted one, the same cell in every sequence of
// the batch (axes {1, 2, 3} of hook_pattern, study/slices.h), exactly and by AtP; the same runs and
// metric as the head study (circuit.h). AtP of a cell is (A_clean - A_corrupted) * d metric / dA
// summed over the batch: already linear after the softmax, so AtP*'s QK fix (for hook_q and hook_k)
// has nothing to add here.
#include <cstddef>
#include <string>

#include "examples/attention_study/tables.h"
#include "study/patching_agreement.h"

namespace tapegrad::attention_study {

// Exact patching costs one forward per cell, heads * seq_q * seq_k of them: the sweep runs up to
// this many cells (4 heads at sequences of 16) and is skipped beyond.
inline constexpr std::size_t kMaxSweptCells = 1024;

struct CellSweep {
  std::string module, name;  // the module's path and short name ("dec1 cross")
  std::size_t heads = 0, queries = 0, keys = 0;
  bool swept = false;          // false: more than kMaxSweptCells cells, exact and atp empty
  study::PatchTable exact;     // rows: head-major, then query, then key
  study::AttributionTable atp;  // the same rows
  // Cells whose A is the same in both runs in every sequence (masked, or a query with one key to
  // attend): patching them changes nothing, exact and AtP are 0. The agreement leaves them out.
  std::size_t unchanged = 0;
  study::Agreement agreement;  // AtP against exact over the other cells (compared 0 for fewer than 2)

  std::size_t cells() const { return heads * queries * keys; }
};

// `module`: the path of an attention module of `model`, `name` its short name. ValueError from
// patch_slices for a module without hook_pattern.
CellSweep cell_sweep(nn::Module<float>& model, const study::RunLoss<float>& run_clean,
                     const study::RunLoss<float>& run_corrupted, const std::string& module, const std::string& name);

// module (its short name), head, query, key, then the share of the gap (clean - corrupted
// metric) patching the cell recovers, exactly and by AtP: every cell in the sweep's order or, with
// `largest`, that many cells largest in |exact share| first. No rows for a sweep that was skipped.
Table cell_table(const CellSweep& sweep, std::size_t largest = 0);
// One sentence: the cells and the module, and AtP's agreement with exact patching over the cells
// compared, or why the sweep was skipped.
std::string cell_sweep_summary(const CellSweep& sweep);

}  // namespace tapegrad::attention_study
