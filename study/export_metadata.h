#pragma once
// What every export of a study carries so that the study can be rebuilt elsewhere without the
// page: the batch's token ids, the model's configuration, the sequence length and the model's
// step. Metadata is strings (all safetensors' __metadata__ holds); the JSON exports hold the same
// strings, so one reader serves every file:
//   "tokens"        the studied batch's input token ids, a JSON array [batch][seq] of integers
//   "seq_len"       tokens per sequence, decimal
//   "step"          the model's optimiser steps (its checkpoint's "step"), decimal
//   "model.<name>"  one per configuration value ("model.d_model" = "32", "model.heads" = "4", ...)
// study/attention_export.h writes it into attention.safetensors, npy/metadata.json and
// bertviz.json, beside the export's own "loss" and "records".
#include <cstdint>

#include "autograd/core/tensor.h"
#include "nn/io/checkpoint.h"

namespace tapegrad::study {

// tokens [batch, seq]; model: configuration name -> value. ShapeError naming export_metadata and
// the shape when tokens is not 2-d.
nn::Metadata export_metadata(const IndexArray& tokens, std::uint64_t step, const nn::Metadata& model);

}  // namespace tapegrad::study
