#include "examples/attention_study/export.h"

#include <span>
#include <string>
#include <vector>

#include "nn/copy_task/copy_task.h"
#include "study/attention_export.h"
#include "study/attribution/rollout.h"

namespace tapegrad::attention_study {

namespace {

// Sequence 0 of tokens [batch, seq] as bertviz labels.
std::vector<std::string> labels(const IndexArray& tokens) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < tokens.shape()[1]; ++i) {
    const Index t = tokens(0, i);
    out.push_back(t == copy_task::kStart ? "<s>" : std::to_string(t));
  }
  return out;
}

}  // namespace

void write_exports(const std::filesystem::path& dir, const StudyResult& study, const IndexArray& data) {
  std::vector<xt::xarray<float>> weights, grads;  // the encoder's layers, forward order
  for (const auto& r : study.capture.records) {
    if (r.module.starts_with("encoder.")) {
      weights.push_back(r.weights);
      grads.push_back(r.weights_grad);
    }
  }
  const std::span<const xt::xarray<float>> A(weights), dA(grads);
  const study::NamedArrays<float> attributions{
      {"encoder.rollout", study::attention_rollout(A)},
      {"encoder.gradient_weighted_rollout", study::gradient_weighted_rollout(A, dA)}};
  study::save_attention_safetensors(dir / "attention.safetensors", study.capture, attributions);
  study::save_attention_npy(dir / "npy", study.capture, attributions);
  const copy_task::Batch batch = copy_task::make_batch(data);
  study::save_bertviz_json(dir / "bertviz.json", study.capture, labels(batch.src), labels(batch.tgt_in));
}

}  // namespace tapegrad::attention_study
