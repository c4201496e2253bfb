#pragma once
// Exact patching with many slices per forward: the target batch replicated R times along axis 0,
// replica r with slice r patched, one forward for R slices instead of R forwards. The same table
// as patch_slices (to rounding: a product over a larger batch may sum in another order), at a
// fraction of the time where per-op work dominates (bench/RESULTS.md: the copy task's heads).
//
//   const study::ReplicatedRun<float> run = [&](std::size_t replicas) {
//     const auto batch = copy_task::make_batch(study::stacked_copies(corrupted_data, replicas));
//     ... return study::score_difference_per_replica(log_probs, correct, wrong, replicas);   // [replicas]
//   };
//   const auto table = study::patch_slices_batched<float>(model, run, clean, points, 1);
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "study/activation_patching.h"

namespace tapegrad::study {

// The target run over `replicas` copies of its batch stacked along axis 0 (copy r is rows
// [r B, (r + 1) B) of every batch-first tensor), returning each copy's metric: [replicas].
template <class T>
using ReplicatedRun = std::function<Tensor<T>(std::size_t replicas)>;

// `rows` [batch, ...] stacked `copies` times along axis 0: [copies * batch, ...], the inputs of a
// ReplicatedRun.
IndexArray stacked_copies(const IndexArray& rows, std::size_t copies);

// patch_slices with up to `replicas_per_forward` slices per forward. The slice axes must not
// include axis 0 (the batch). Errors: patch_slices' naming patch_slices_batched; ValueError when
// run(R) does not return R metrics, when a point's axis 0 in the replicated run is not R times the
// source's, or replicas_per_forward is 0.
template <class T>
PatchTable patch_slices_batched(nn::Module<T>& model, const ReplicatedRun<T>& run, const ActivationCache<T>& source,
                                const std::vector<std::string>& points, const SliceAxes& axes,
                                std::size_t replicas_per_forward = 64);

}  // namespace tapegrad::study
