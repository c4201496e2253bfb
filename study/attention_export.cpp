#include "study/attention_export.h"

#include <set>

#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "autograd/base/errors.h"
#include "nn/io/atomic_file.h"
#include "nn/io/checkpoint.h"
#include "study/exact_text.h"

namespace tapegrad::study {

namespace fs = std::filesystem;

namespace {

// nlohmann's json with float numbers: A printed with float's shortest round-trip digits, not
// the 17 of the double it would otherwise be widened to (half the file).
using FloatJson = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t, std::uint64_t, float>;

[[noreturn]] void fail(const std::string& op, const fs::path& path, const std::string& problem) {
  throw ValueError(op + "('" + path.string() + "'): " + problem);
}

// Runs a write of the checkpoint layer under op's name: its ValueError names save_safetensors or
// save_npy, the user called op.
template <class Write>
void renamed(const std::string& op, const fs::path& path, Write&& write) {
  try {
    write();
  } catch (const ValueError& e) {
    fail(op, path, e.what());
  }
}


// One bertviz entry: the listed records of batch element `batch` as [layers][heads][seq_q][seq_k].
template <class T>
FloatJson bertviz_entry(const std::string& op, const fs::path& path, const FloatJson& name,
                        const std::vector<const AttentionRecord<T>*>& layers, const std::vector<std::string>& left,
                        const std::string& left_arg, const std::vector<std::string>& right,
                        const std::string& right_arg, std::size_t batch) {
  FloatJson attn = FloatJson::array();
  for (const AttentionRecord<T>* r : layers) {
    const auto& shape = r->weights.shape();  // [batch, heads, seq_q, seq_k]
    if (batch >= shape[0]) {
      fail(op, path, "batch element " + std::to_string(batch) + " is out of range: '" + r->name + "' weights " +
                         format_shape(shape) + " hold " + std::to_string(shape[0]));
    }
    if (shape[2] != left.size() || shape[3] != right.size()) {
      throw ShapeError(op + "('" + path.string() + "'): '" + r->name + "' weights " + format_shape(shape) +
                       " [batch, heads, seq_q, seq_k] need " + std::to_string(shape[2]) + " " + left_arg + " and " +
                       std::to_string(shape[3]) + " " + right_arg + ", got " + std::to_string(left.size()) + " and " +
                       std::to_string(right.size()));
    }
    FloatJson heads = FloatJson::array();
    for (std::size_t h = 0; h < shape[1]; ++h) {
      FloatJson rows = FloatJson::array();
      for (std::size_t q = 0; q < shape[2]; ++q) {
        FloatJson row = FloatJson::array();
        for (std::size_t k = 0; k < shape[3]; ++k) row.push_back(static_cast<float>(r->weights(batch, h, q, k)));
        rows.push_back(std::move(row));
      }
      heads.push_back(std::move(rows));
    }
    attn.push_back(std::move(heads));
  }
  return {{"name", name}, {"attn", std::move(attn)}, {"left_text", left}, {"right_text", right}};
}

// bertviz's params for one sequence's entries; layer counts must agree (include_layers is shared).
FloatJson bertviz_params(const std::string& op, const fs::path& path, const std::vector<FloatJson>& entries) {
  const std::size_t layers = entries.front()["attn"].size();
  for (const FloatJson& e : entries) {
    if (e["attn"].size() != layers) {
      fail(op, path,
           "the attention types have different layer counts (" + std::to_string(layers) + " and " +
               std::to_string(e["attn"].size()) + "); bertviz shows one layer index for all");
    }
  }
  std::vector<std::size_t> include_layers(layers);
  for (std::size_t i = 0; i < layers; ++i) include_layers[i] = i;
  return {{"attention", entries},          {"default_filter", "0"},
          {"root_div_id", "bertviz-tapegrad"}, {"layer", nullptr},
          {"heads", nullptr},               {"include_layers", include_layers}};
}

template <class T>
void require_records(const std::string& op, const fs::path& path, const AttentionCapture<T>& capture) {
  if (capture.records.empty()) fail(op, path, "the capture has no attention records (the model ran no attention module)");
}

// Every export's metadata: the capture's loss and record names, then the caller's.
template <class T>
nn::Metadata export_metadata_of(const std::string& op, const fs::path& path, const AttentionCapture<T>& capture,
                                const nn::Metadata& metadata) {
  nlohmann::json records = nlohmann::json::array();
  for (const AttentionRecord<T>& r : capture.records) records.push_back(r.name);
  nn::Metadata out{{"loss", exact_text(capture.loss)}, {"records", records.dump()}};
  for (const auto& [key, value] : metadata) {
    if (!out.emplace(key, value).second) {
      fail(op, path, "the metadata key '" + key + "' is the export's own (\"loss\" and \"records\" are reserved)");
    }
  }
  return out;
}

// The sequences of the capture's batch, which every token list must match in number.
template <class T>
std::size_t sequences_of(const std::string& op, const fs::path& path, const AttentionCapture<T>& capture,
                         std::initializer_list<std::pair<const SequenceTokens*, const char*>> token_lists) {
  const auto& shape = capture.records.front().weights.shape();
  for (const auto& [tokens, arg] : token_lists) {
    if (tokens->size() != shape[0]) {
      throw ShapeError(op + "('" + path.string() + "'): '" + capture.records.front().name + "' weights " +
                       format_shape(shape) + " hold " + std::to_string(shape[0]) + " sequences, but " + arg +
                       " has token lists for " + std::to_string(tokens->size()));
    }
  }
  return shape[0];
}

// Writes {"sequences": [params per sequence], "metadata": {...}}.
void write_bertviz(const std::string& op, const fs::path& path, const std::vector<FloatJson>& sequences,
                   const nn::Metadata& metadata) {
  const FloatJson file = {{"sequences", sequences}, {"metadata", metadata}};
  nn::write_file_atomic(path, file.dump(), op);
}

}  // namespace

template <class T>
NamedArrays<T> attention_arrays(const AttentionCapture<T>& capture, const NamedArrays<T>& extras,
                                const std::string& op) {
  if (capture.records.empty()) {
    throw ValueError(op + ": the capture has no attention records (the model ran no attention module)");
  }
  NamedArrays<T> out;
  for (const AttentionRecord<T>& r : capture.records) {
    out.emplace_back(r.name + ".scores", r.scores);
    out.emplace_back(r.name + ".weights", r.weights);
    if (r.dropped_weights) out.emplace_back(r.name + ".dropped_weights", *r.dropped_weights);
    out.emplace_back(r.name + ".scores_grad", r.scores_grad);
    out.emplace_back(r.name + ".weights_grad", r.weights_grad);
    out.emplace_back(r.name + ".may_attend", xt::xarray<T>(xt::cast<T>(r.may_attend)));
  }
  out.insert(out.end(), extras.begin(), extras.end());
  std::set<std::string> seen;
  for (const auto& [name, array] : out) {
    if (!seen.insert(name).second) {
      throw ValueError(op + ": two arrays are named '" + name + "' (an extra array named like a capture's array or another extra)");
    }
  }
  return out;
}

template <class T>
void save_attention_safetensors(const fs::path& path, const AttentionCapture<T>& capture, const NamedArrays<T>& extras,
                                const nn::Metadata& metadata) {
  const std::string op = "save_attention_safetensors";
  require_records(op, path, capture);
  const nn::Metadata all_metadata = export_metadata_of(op, path, capture, metadata);
  nn::StateDict<T> tensors;
  for (auto& [name, array] : attention_arrays(capture, extras, op + "('" + path.string() + "')")) {
    tensors.emplace(name, std::move(array));
  }
  renamed(op, path, [&] { nn::save_safetensors(path, tensors, all_metadata); });
}

template <class T>
void save_attention_npy(const fs::path& dir, const AttentionCapture<T>& capture, const NamedArrays<T>& extras,
                        const nn::Metadata& metadata) {
  const std::string op = "save_attention_npy";
  require_records(op, dir, capture);
  const nn::Metadata all_metadata = export_metadata_of(op, dir, capture, metadata);
  const NamedArrays<T> arrays = attention_arrays(capture, extras, op + "('" + dir.string() + "')");
  for (const auto& [name, array] : arrays) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
      fail(op, dir, "the array name '" + name + "' is not a plain file name");
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(op, dir, "cannot create the directory: " + ec.message());
  for (const auto& [name, array] : arrays) {
    const fs::path file = dir / (name + ".npy");
    const auto& values = array;  // clang 14 (the fuzzers' compiler) cannot capture a structured binding
    renamed(op, dir, [&] { nn::save_npy(file, values); });
  }
  nn::write_file_atomic(dir / "metadata.json", nlohmann::json(all_metadata).dump(), op);
}

template <class T>
void save_bertviz_json(const fs::path& path, const AttentionCapture<T>& capture, const SequenceTokens& encoder_tokens,
                       const SequenceTokens& decoder_tokens, const nn::Metadata& metadata) {
  const std::string op = "save_bertviz_json";
  require_records(op, path, capture);
  const nn::Metadata all_metadata = export_metadata_of(op, path, capture, metadata);
  std::vector<const AttentionRecord<T>*> encoder, decoder, cross;
  for (const AttentionRecord<T>& r : capture.records) {
    if (r.module.starts_with("encoder.")) {
      encoder.push_back(&r);
    } else if (r.module.ends_with("self_attention")) {
      decoder.push_back(&r);
    } else if (r.module.ends_with("src_tgt_attention")) {
      cross.push_back(&r);
    }
  }
  if (encoder.empty() || decoder.empty() || cross.empty()) {
    fail(op, path,
         "not an encoder-decoder capture: records under 'encoder.': " + std::to_string(encoder.size()) +
             ", ending in 'self_attention': " + std::to_string(decoder.size()) + ", ending in 'src_tgt_attention': " +
             std::to_string(cross.size()) + " (use the single-stack overload)");
  }
  const std::size_t batch =
      sequences_of(op, path, capture, {{&encoder_tokens, "encoder_tokens"}, {&decoder_tokens, "decoder_tokens"}});
  std::vector<FloatJson> sequences;
  for (std::size_t b = 0; b < batch; ++b) {
    const auto& source = encoder_tokens[b];
    const auto& target = decoder_tokens[b];
    sequences.push_back(bertviz_params(
        op, path,
        {bertviz_entry(op, path, "Encoder", encoder, source, "encoder_tokens", source, "encoder_tokens", b),
         bertviz_entry(op, path, "Decoder", decoder, target, "decoder_tokens", target, "decoder_tokens", b),
         bertviz_entry(op, path, "Cross", cross, target, "decoder_tokens", source, "encoder_tokens", b)}));
  }
  write_bertviz(op, path, sequences, all_metadata);
}

template <class T>
void save_bertviz_json(const fs::path& path, const AttentionCapture<T>& capture, const SequenceTokens& tokens,
                       const nn::Metadata& metadata) {
  const std::string op = "save_bertviz_json";
  require_records(op, path, capture);
  const nn::Metadata all_metadata = export_metadata_of(op, path, capture, metadata);
  std::vector<const AttentionRecord<T>*> layers;
  for (const AttentionRecord<T>& r : capture.records) layers.push_back(&r);
  std::vector<FloatJson> sequences;
  for (std::size_t b = 0, batch = sequences_of(op, path, capture, {{&tokens, "tokens"}}); b < batch; ++b) {
    sequences.push_back(
        bertviz_params(op, path, {bertviz_entry(op, path, nullptr, layers, tokens[b], "tokens", tokens[b], "tokens", b)}));
  }
  write_bertviz(op, path, sequences, all_metadata);
}

#define TAPEGRAD_INSTANTIATE_ATTENTION_EXPORT(T)                                                                  \
  template NamedArrays<T> attention_arrays(const AttentionCapture<T>&, const NamedArrays<T>&, const std::string&); \
  template void save_attention_safetensors(const fs::path&, const AttentionCapture<T>&, const NamedArrays<T>&,  \
                                           const nn::Metadata&);                                                \
  template void save_attention_npy(const fs::path&, const AttentionCapture<T>&, const NamedArrays<T>&,          \
                                   const nn::Metadata&);                                                        \
  template void save_bertviz_json(const fs::path&, const AttentionCapture<T>&, const SequenceTokens&,           \
                                  const SequenceTokens&, const nn::Metadata&);                                  \
  template void save_bertviz_json(const fs::path&, const AttentionCapture<T>&, const SequenceTokens&,           \
                                  const nn::Metadata&);

TAPEGRAD_INSTANTIATE_ATTENTION_EXPORT(float)
TAPEGRAD_INSTANTIATE_ATTENTION_EXPORT(double)

}  // namespace tapegrad::study
