#include "examples/attention_study/export.h"

#include <string>
#include <vector>

#include "nn/copy_task/copy_task.h"
#include "study/attention_export.h"
#include "study/exact_text.h"
#include "study/export_metadata.h"

namespace tapegrad::attention_study {

namespace {

// Every sequence of tokens [batch, seq] as bertviz labels.
study::SequenceTokens labels(const IndexArray& tokens) {
  study::SequenceTokens out(tokens.shape()[0]);
  for (std::size_t b = 0; b < tokens.shape()[0]; ++b)
    for (std::size_t i = 0; i < tokens.shape()[1]; ++i) {
      const Index t = tokens(b, i);
      out[b].push_back(t == copy_task::kStart ? "<s>" : std::to_string(t));
    }
  return out;
}

// The model's configuration, as copy_task::make_model reads it.
nn::Metadata model_configuration(const copy_task::Config& c) {
  return {{"vocab", std::to_string(c.vocab)},     {"layers", std::to_string(c.layers)},
          {"d_model", std::to_string(c.d_model)}, {"d_ff", std::to_string(c.d_ff)},
          {"heads", std::to_string(c.heads)},     {"dropout", study::exact_text(c.dropout)}};
}

}  // namespace

void write_exports(const std::filesystem::path& dir, const RunInfo& run, const StudyResult& study,
                   const IndexArray& data) {
  const nn::Metadata metadata = study::export_metadata(data, run.steps, model_configuration(run.config));
  study::NamedArrays<float> attributions;  // the page's maps, encoder's and decoder's
  for (const AttributionMap& a : study.attributions) attributions.emplace_back(a.array_name, a.values);
  study::save_attention_safetensors(dir / "attention.safetensors", study.capture, attributions, metadata);
  study::save_attention_npy(dir / "npy", study.capture, attributions, metadata);
  const copy_task::Batch batch = copy_task::make_batch(data);
  study::save_bertviz_json(dir / "bertviz.json", study.capture, labels(batch.src), labels(batch.tgt_in), metadata);
}

}  // namespace tapegrad::attention_study
