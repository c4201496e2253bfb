#pragma once
// Where in the residual stream the copy lives, position by position: the residual stream entering
// each encoder and decoder layer, and leaving each stack, patched at one position (every sequence
// of the batch at once) from the clean run into the corrupted one (TransformerLens's resid_pre
// patching), exactly and by AtP; the same runs and metric as the head study (circuit.h).
#include <string>
#include <vector>

#include "examples/attention_study/tables.h"
#include "study/attribution_patching.h"

namespace tapegrad::attention_study {

struct PositionSweep {
  std::vector<std::string> points;  // the residual stream's points, in forward order
  std::vector<std::string> names;   // per point: "enc0 in", ..., "enc out", "dec0 in", ..., "dec out"
  study::PatchTable exact;          // rows: point-major, positions in order
  study::AttributionTable atp;      // the same rows
};

PositionSweep position_sweep(nn::transformer::Transformer<float>& model, const study::RunLoss<float>& run_clean,
                             const study::RunLoss<float>& run_corrupted);

// One row per point, one column per position: the share of the gap (clean - corrupted metric)
// patching it recovers, exactly (atp = false) or as AtP estimates it; the decoder's rows, one
// position shorter (its input is the sequence less its last token), end in a blank cell.
Table position_table(const PositionSweep& sweep, double gap, bool atp);

}  // namespace tapegrad::attention_study
