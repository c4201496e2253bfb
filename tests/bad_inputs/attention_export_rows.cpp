// Rows of docs/bad-inputs.md, section "study: attention snapshots and export".
#include "autograd/ops/reduce.h"
#include "study/attention_export.h"
#include "study/training_snapshots.h"
#include "nn/labml/multi_head_attention.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

// The capture of one labml MultiHeadAttention (2 heads) over 3 positions: one record named "".
study::AttentionCapture<double> one_record() {
  nn::labml::MultiHeadAttention<double> mha(2, 4, gen());
  return study::capture_attention(mha, [&] { return sum(mha(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({3, 1, 4}))); });
}

BAD_INPUT_ROW(Nn, attention_export_empty_capture, ValueError,
              (study::save_attention_safetensors<double>("unused.safetensors", study::AttentionCapture<double>{})),
              "save_attention_safetensors('unused.safetensors')", "no attention records")
BAD_INPUT_ROW(Nn, attention_export_name_collision, ValueError,
              (study::save_attention_npy<double>("unused_npy", one_record(), {{".weights", xt::zeros<double>({2})}})),
              "save_attention_npy('unused_npy')", "two arrays are named '.weights'")
BAD_INPUT_ROW(Nn, attention_export_unwritable_path, ValueError,
              (study::save_attention_safetensors<double>("/dev/null/a.safetensors", one_record())),
              "save_attention_safetensors('/dev/null/a.safetensors')", "cannot create the temp file",
              "Not a directory", "unchanged")
BAD_INPUT_ROW(Nn, bertviz_tokens_wrong_length, ShapeError,
              (study::save_bertviz_json<double>("unused.json", one_record(), {{"a", "b"}})),
              "save_bertviz_json('unused.json')", "[1,2,3,3]", "need 3 tokens", "got 2")
BAD_INPUT_ROW(Nn, bertviz_tokens_for_another_batch, ShapeError,
              (study::save_bertviz_json<double>("unused.json", one_record(), {{"a", "b", "c"}, {"a", "b", "c"}})),
              "save_bertviz_json('unused.json')", "[1,2,3,3] hold 1 sequences", "tokens has token lists for 2")
BAD_INPUT_ROW(Nn, attention_export_reserved_metadata_key, ValueError,
              (study::save_attention_npy<double>("unused_npy", one_record(), {}, {{"loss", "0"}})),
              "save_attention_npy('unused_npy')", "metadata key 'loss'", "reserved")
BAD_INPUT_ROW(Nn, snapshot_of_empty_capture, ValueError, (study::snapshot_of(study::AttentionCapture<float>{}, 0)),
              "snapshot_of", "no attention records")
BAD_INPUT_ROW(Nn, save_snapshots_same_step_twice, ValueError, ([] {
                const study::AttentionSnapshot s = study::snapshot_of(one_record(), 4);
                study::save_snapshots("unused.safetensors", {s, s});
              }()),
              "save_snapshots('unused.safetensors')", "two snapshots of step 4")

}  // namespace
}  // namespace tapegrad::bad_inputs
