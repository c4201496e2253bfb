#pragma once
// The study's data for other tools (study/attention_export.h), next to the page in the output
// directory, each holding the study's metadata (study/export_metadata.h: the batch's token ids,
// the model's configuration, the sequence length and the model's step):
//   attention.safetensors  every capture array ("<module path>.weights", ".scores_grad", ...) and
//                          the page's attribution maps [batch, seq, seq] (study.h):
//                          "encoder.rollout", "encoder.gradient_weighted_rollout" and the same two
//                          of the decoder ("decoder.rollout", ...)
//   npy/                   the same arrays, one .npy each, and metadata.json
//   bertviz.json           bertviz head view's params for every sequence of the batch (encoder,
//                          decoder and cross attention, tokens as their numbers, "<s>" for the start)
// load_study.py (beside this file) reads them back into NumPy and PyTorch, checks them against
// the checkpoint, and calls bertviz's head_view (docs/attention-study.md, "From Python").
#include <filesystem>

#include "examples/attention_study/report.h"
#include "examples/attention_study/study.h"

namespace tapegrad::attention_study {

void write_exports(const std::filesystem::path& dir, const RunInfo& run, const StudyResult& study,
                   const IndexArray& data);

}  // namespace tapegrad::attention_study
