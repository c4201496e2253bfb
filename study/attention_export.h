#pragma once
// Export of a capture (study/attention_capture.h) into the tools people already have:
//   save_attention_safetensors  one file, PyTorch: a hand-written reader or safetensors.torch.load_file
//   save_attention_npy          one NumPy .npy per array in a directory: numpy.load
//   save_bertviz_json           per sequence, the `params` object bertviz's head_view.js reads (PYTHON_PARAMS)
// Arrays are named "<record name>.<quantity>" (record names are the dotted module paths,
// "path#2" for a second call), quantity one of
//   scores, weights, dropped_weights (only when dropout was active), scores_grad, weights_grad
//     [batch, heads, seq_q, seq_k]
//   may_attend  [batch, seq_q, seq_k], 1 = may attend, 0 = masked
// followed by the caller's extra arrays (attribution maps: "rollout", ...) under their own names.
// Every export holds the same metadata strings: "loss" (17 significant digits) and "records" (a
// JSON array of the record names, forward order), then the caller's (study/export_metadata.h:
// tokens, model configuration, sequence length, step). Every file is written atomically
// (nn/io/atomic_file.h). Errors are ValueError / ShapeError naming the function and the path: an
// empty capture, two arrays with one name, a caller's metadata key "loss" or "records", a failed
// write.
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "nn/io/checkpoint.h"
#include "study/attention_capture.h"

namespace tapegrad::study {

template <class T>
using NamedArrays = std::vector<std::pair<std::string, xt::xarray<T>>>;

// The arrays above, records in forward order, then the extras. ValueError naming `op` when the
// capture is empty or a name occurs twice (an extra named like a record's array, or two extras).
template <class T>
NamedArrays<T> attention_arrays(const AttentionCapture<T>& capture, const NamedArrays<T>& extras,
                                const std::string& op = "attention_arrays");

// One safetensors file (F32 for float, F64 for double) of attention_arrays, the metadata in its
// __metadata__.
template <class T>
void save_attention_safetensors(const std::filesystem::path& path, const AttentionCapture<T>& capture,
                                const NamedArrays<T>& extras = {}, const nn::Metadata& metadata = {});

// "<dir>/<array name>.npy" (format 1.0, '<f4' or '<f8', C order) for every attention_arrays
// entry, and "<dir>/metadata.json", the metadata as a JSON object of strings; creates dir. Also
// ValueError for a name that is not a plain file name ("", ".", "..", or holding '/').
template <class T>
void save_attention_npy(const std::filesystem::path& dir, const AttentionCapture<T>& capture,
                        const NamedArrays<T>& extras = {}, const nn::Metadata& metadata = {});

// Token labels, one list per sequence of the batch.
using SequenceTokens = std::vector<std::vector<std::string>>;

// bertviz's head-view parameters for every sequence of the batch (bertviz shows one at a time):
//   {"sequences": [params of sequence 0, 1, ...], "metadata": {...}}, each params
//   {"attention": [{"name": ..., "attn": [layers][heads][seq_q][seq_k], "left_text": [seq_q tokens],
//                   "right_text": [seq_k tokens]}, ...],
//    "default_filter": "0", "root_div_id": "bertviz-tapegrad", "layer": null, "heads": null,
//    "include_layers": [0, ..., layers-1]}
// (layer/heads null: bertviz's defaults, layer 0 and every head). Load it with json.load and pass
// a sequence's params to head_view.js in place of PYTHON_PARAMS. ShapeError naming the function
// when a token list's count or length does not fit the records' [batch, heads, seq_q, seq_k].
//
// Encoder-decoder (nn::transformer::Transformer): as bertviz's head_view(encoder_attention=,
// decoder_attention=, cross_attention=), entries "Encoder" (records under "encoder."), "Decoder"
// (records ending in "self_attention") and "Cross" (records ending in "src_tgt_attention", decoder
// tokens on the left, encoder tokens on the right), each in layer (forward) order.
template <class T>
void save_bertviz_json(const std::filesystem::path& path, const AttentionCapture<T>& capture,
                       const SequenceTokens& encoder_tokens, const SequenceTokens& decoder_tokens,
                       const nn::Metadata& metadata = {});

// A single stack (head_view(attention, tokens)): one entry named null, every record a layer.
template <class T>
void save_bertviz_json(const std::filesystem::path& path, const AttentionCapture<T>& capture,
                       const SequenceTokens& tokens, const nn::Metadata& metadata = {});

}  // namespace tapegrad::study
