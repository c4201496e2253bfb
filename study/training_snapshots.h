#pragma once
// Attention over training: snapshots of A, dL/dA, S and dL/dS (study/attention_snapshot.h) taken at chosen
// optimiser steps on a FIXED probe batch, so maps of different steps show the same sequences
// and can be compared cell by cell, and the file that holds them.
//
//   const auto steps = study::doubling_schedule(total_steps);          // 0, 1, 2, 4, ..., total
//   auto probe = [&] { return copy_task::batch_loss(model, probe_batch); };
//   snapshots.push_back(study::take_snapshot(model, probe, 0));        // before training
//   ... after optimiser step s: if (std::binary_search(steps.begin(), steps.end(), s)) push_back(take_snapshot(...))
//   study::save_snapshots(out / "snapshots.safetensors", snapshots);
#include <cstddef>
#include <filesystem>
#include <vector>

#include "study/attention_capture.h"
#include "study/attention_snapshot.h"

namespace tapegrad::study {

// 0, 1, 2, 4, 8, ... (doubling while below last_step), then last_step. Attention changes fastest
// early (the copy task's diagonal forms in the first few dozen steps) and slowly later, so
// log-spaced steps show the change evenly, sit evenly on a log-scale loss curve, and cost
// O(log last_step) snapshots however long the run.
std::vector<std::size_t> doubling_schedule(std::size_t last_step);

// The snapshot of a capture made after `step` optimiser steps: its loss, and every record's name,
// A, dL/dA, S and dL/dS in forward order (converted to float). ValueError naming snapshot_of when
// the capture has no records.
template <class T>
AttentionSnapshot snapshot_of(const AttentionCapture<T>& capture, std::size_t step);

// capture_attention(model, probe_loss) in eval mode (no dropout, so the maps are the model's and
// dropout's random streams do not advance), then snapshot_of(.., step). Training is not
// disturbed: the training mode and every parameter's gradient (present or absent, bit for bit)
// are restored afterwards, also when the capture throws, since the capture's backward adds into
// grad() and an optimiser step after it must see only the training batch's gradient.
template <class T>
AttentionSnapshot take_snapshot(nn::Module<T>& model, const RunLoss<T>& probe_loss, std::size_t step);

// One safetensors file (nn/io/checkpoint.h's writer, F32). Not float16: in the copy task's default
// run a part of the non-zero dL/dA cells lie below float16's smallest normal 6e-5 (down to 4e-9),
// where it keeps few or no digits.
//   "step<step>.<record name>.weights" / ".weights_grad"    A, dL/dA [batch, heads, seq_q, seq_k]
//   "step<step>.<record name>.scores" / ".scores_grad"      S, dL/dS [batch, heads, seq_q, seq_k]
//   __metadata__ "format" = "tapegrad.attention_snapshots.v2", "steps" = "0,1,2,...",
//                "step<step>.loss" (17 significant digits), "step<step>.names" (a JSON array,
//                forward order)
// Version 1 had no scores and scores_grad. ValueError naming save_snapshots and the path for no
// snapshots, two with the same step, a snapshot whose names and arrays differ in number, or a
// write failure (atomic: nothing is left half-written).
void save_snapshots(const std::filesystem::path& path, const std::vector<AttentionSnapshot>& snapshots);

// Reads a save_snapshots file back, in the order saved; a version 1 file too, its snapshots
// without scores and scores_grad. ValueError naming load_snapshots and the path for a file that
// is not one (load_safetensors' checks, a missing or unknown format, a missing entry).
std::vector<AttentionSnapshot> load_snapshots(const std::filesystem::path& path);

}  // namespace tapegrad::study
