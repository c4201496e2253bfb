#pragma once
// Export of a capture (study/attention_capture.h) into the tools people already have:
//   save_attention_safetensors  one file, PyTorch: a hand-written reader or safetensors.torch.load_file
//   save_attention_npy          one NumPy .npy per array in a directory: numpy.load
//   save_bertviz_json           the `params` object bertviz's head_view.js reads (PYTHON_PARAMS)
// Arrays are named "<record name>.<quantity>" (record names are the dotted module paths,
// "path#2" for a second call), quantity one of
//   scores, weights, dropped_weights (only when dropout was active), scores_grad, weights_grad
//     [batch, heads, seq_q, seq_k]
//   may_attend  [batch, seq_q, seq_k], 1 = may attend, 0 = masked
// followed by the caller's extra arrays (attribution maps: "rollout", ...) under their own names.
// Every file is written atomically (nn/io/atomic_file.h). Errors are ValueError / ShapeError naming
// the function and the path: an empty capture, two arrays with one name, a failed write.
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "study/attention_capture.h"

namespace tapegrad::study {

template <class T>
using NamedArrays = std::vector<std::pair<std::string, xt::xarray<T>>>;

// The arrays above, records in forward order, then the extras. ValueError naming `op` when the
// capture is empty or a name occurs twice (an extra named like a record's array, or two extras).
template <class T>
NamedArrays<T> attention_arrays(const AttentionCapture<T>& capture, const NamedArrays<T>& extras,
                                const std::string& op = "attention_arrays");

// One safetensors file (F32 for float, F64 for double) of attention_arrays, with __metadata__
// "loss" (17 significant digits) and "records" (a JSON array of the record names, forward order).
template <class T>
void save_attention_safetensors(const std::filesystem::path& path, const AttentionCapture<T>& capture,
                                const NamedArrays<T>& extras = {});

// "<dir>/<array name>.npy" (format 1.0, '<f4' or '<f8', C order) for every attention_arrays
// entry; creates dir. Also ValueError for a name that is not a plain file name ("", ".", "..",
// or holding '/').
template <class T>
void save_attention_npy(const std::filesystem::path& dir, const AttentionCapture<T>& capture,
                        const NamedArrays<T>& extras = {});

// bertviz's head-view parameters for batch element `batch` (bertviz shows one sequence):
//   {"attention": [{"name": ..., "attn": [layers][heads][seq_q][seq_k], "left_text": [seq_q tokens],
//                   "right_text": [seq_k tokens]}, ...],
//    "default_filter": "0", "root_div_id": "bertviz-tapegrad", "layer": null, "heads": null,
//    "include_layers": [0, ..., layers-1]}
// (layer/heads null: bertviz's defaults, layer 0 and every head). Load it with json.load and pass
// it to head_view.js in place of PYTHON_PARAMS.
//
// Encoder-decoder (nn::transformer::Transformer): as bertviz's head_view(encoder_attention=,
// decoder_attention=, cross_attention=), entries "Encoder" (records under "encoder."), "Decoder"
// (records ending in "self_attention") and "Cross" (records ending in "src_tgt_attention", decoder
// tokens on the left, encoder tokens on the right), each in layer (forward) order.
template <class T>
void save_bertviz_json(const std::filesystem::path& path, const AttentionCapture<T>& capture,
                       const std::vector<std::string>& encoder_tokens, const std::vector<std::string>& decoder_tokens,
                       std::size_t batch = 0);

// A single stack (head_view(attention, tokens)): one entry named null, every record a layer.
template <class T>
void save_bertviz_json(const std::filesystem::path& path, const AttentionCapture<T>& capture,
                       const std::vector<std::string>& tokens, std::size_t batch = 0);

}  // namespace tapegrad::study
