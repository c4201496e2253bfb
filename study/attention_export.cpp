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

// Writes bertviz's params for the entries; layer counts must agree (include_layers is shared).
void write_bertviz(const std::string& op, const fs::path& path, const std::vector<FloatJson>& entries) {
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
  const FloatJson params = {{"attention", entries},          {"default_filter", "0"},
                            {"root_div_id", "bertviz-tapegrad"}, {"layer", nullptr},
                            {"heads", nullptr},               {"include_layers", include_layers}};
  nn::write_file_atomic(path, params.dump(), op);
}

template <class T>
void require_records(const std::string& op, const fs::path& path, const AttentionCapture<T>& capture) {
  if (capture.records.empty()) fail(op, path, "the capture has no attention records (the model ran no attention module)");
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
void save_attention_safetensors(const fs::path& path, const AttentionCapture<T>& capture, const NamedArrays<T>& extras) {
  const std::string op = "save_attention_safetensors";
  require_records(op, path, capture);
  nn::StateDict<T> tensors;
  for (auto& [name, array] : attention_arrays(capture, extras, op + "('" + path.string() + "')")) {
    tensors.emplace(name, std::move(array));
  }
  nlohmann::json records = nlohmann::json::array();
  for (const AttentionRecord<T>& r : capture.records) records.push_back(r.name);
  renamed(op, path,
          [&] { nn::save_safetensors(path, tensors, {{"loss", exact_text(capture.loss)}, {"records", records.dump()}}); });
}

template <class T>
void save_attention_npy(const fs::path& dir, const AttentionCapture<T>& capture, const NamedArrays<T>& extras) {
  const std::string op = "save_attention_npy";
  require_records(op, dir, capture);
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
}

template <class T>
void save_bertviz_json(const fs::path& path, const AttentionCapture<T>& capture,
                       const std::vector<std::string>& encoder_tokens, const std::vector<std::string>& decoder_tokens,
                       std::size_t batch) {
  const std::string op = "save_bertviz_json";
  require_records(op, path, capture);
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
  write_bertviz(op, path,
                {bertviz_entry(op, path, "Encoder", encoder, encoder_tokens, "encoder_tokens", encoder_tokens,
                               "encoder_tokens", batch),
                 bertviz_entry(op, path, "Decoder", decoder, decoder_tokens, "decoder_tokens", decoder_tokens,
                               "decoder_tokens", batch),
                 bertviz_entry(op, path, "Cross", cross, decoder_tokens, "decoder_tokens", encoder_tokens,
                               "encoder_tokens", batch)});
}

template <class T>
void save_bertviz_json(const fs::path& path, const AttentionCapture<T>& capture, const std::vector<std::string>& tokens,
                       std::size_t batch) {
  const std::string op = "save_bertviz_json";
  require_records(op, path, capture);
  std::vector<const AttentionRecord<T>*> layers;
  for (const AttentionRecord<T>& r : capture.records) layers.push_back(&r);
  write_bertviz(op, path, {bertviz_entry(op, path, nullptr, layers, tokens, "tokens", tokens, "tokens", batch)});
}

#define TAPEGRAD_INSTANTIATE_ATTENTION_EXPORT(T)                                                                  \
  template NamedArrays<T> attention_arrays(const AttentionCapture<T>&, const NamedArrays<T>&, const std::string&); \
  template void save_attention_safetensors(const fs::path&, const AttentionCapture<T>&, const NamedArrays<T>&);   \
  template void save_attention_npy(const fs::path&, const AttentionCapture<T>&, const NamedArrays<T>&);           \
  template void save_bertviz_json(const fs::path&, const AttentionCapture<T>&, const std::vector<std::string>&,   \
                                  const std::vector<std::string>&, std::size_t);                                  \
  template void save_bertviz_json(const fs::path&, const AttentionCapture<T>&, const std::vector<std::string>&,   \
                                  std::size_t);

TAPEGRAD_INSTANTIATE_ATTENTION_EXPORT(float)
TAPEGRAD_INSTANTIATE_ATTENTION_EXPORT(double)

}  // namespace tapegrad::study
