#include "study/training_snapshots.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "autograd/base/errors.h"
#include "nn/io/checkpoint.h"
#include "study/exact_text.h"

namespace tapegrad::study {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "tapegrad.attention_snapshots.v2";
// Version 1 kept A and dL/dA only: the first two of quantities().
constexpr const char* kFormatV1 = "tapegrad.attention_snapshots.v1";

[[noreturn]] void fail(const char* op, const fs::path& path, const std::string& problem) {
  throw ValueError(std::string(op) + "('" + path.string() + "'): " + problem);
}

std::string prefix(std::size_t step) { return "step" + std::to_string(step); }

// A snapshot's arrays by the suffix of their names in the file (Snapshot: AttentionSnapshot, const or not).
template <class Snapshot>
auto quantities(Snapshot& s) {
  return std::array{std::pair{".weights", &s.weights}, std::pair{".weights_grad", &s.weights_grad},
                    std::pair{".scores", &s.scores}, std::pair{".scores_grad", &s.scores_grad}};
}


// Every parameter's gradient as it was, put back when this goes out of scope.
template <class T>
class GradientsRestored {
 public:
  explicit GradientsRestored(const nn::Module<T>& model) {
    for (Tensor<T>& p : model.parameters()) {
      saved_.emplace_back(p, p.has_grad() ? std::optional<xt::xarray<T>>(p.grad()) : std::nullopt);
    }
  }
  ~GradientsRestored() {
    for (auto& [p, grad] : saved_) {
      if (grad) {
        p.set_grad(std::move(*grad));
      } else {
        p.zero_grad();
      }
    }
  }
  GradientsRestored(const GradientsRestored&) = delete;
  GradientsRestored& operator=(const GradientsRestored&) = delete;

 private:
  std::vector<std::pair<Tensor<T>, std::optional<xt::xarray<T>>>> saved_;
};

}  // namespace

std::vector<std::size_t> doubling_schedule(std::size_t last_step) {
  std::vector<std::size_t> steps{0};
  for (std::size_t s = 1; s < last_step; s *= 2) steps.push_back(s);
  if (last_step > 0) steps.push_back(last_step);
  return steps;
}

template <class T>
AttentionSnapshot snapshot_of(const AttentionCapture<T>& capture, std::size_t step) {
  if (capture.records.empty()) {
    throw ValueError("snapshot_of: the capture has no attention records (the model ran no attention module)");
  }
  AttentionSnapshot out;
  out.step = step;
  out.loss = capture.loss;
  for (const AttentionRecord<T>& r : capture.records) {
    out.names.push_back(r.name);
    out.weights.emplace_back(xt::xarray<float>(xt::cast<float>(r.weights)));
    out.weights_grad.emplace_back(xt::xarray<float>(xt::cast<float>(r.weights_grad)));
    out.scores.emplace_back(xt::xarray<float>(xt::cast<float>(r.scores)));
    out.scores_grad.emplace_back(xt::xarray<float>(xt::cast<float>(r.scores_grad)));
  }
  return out;
}

template <class T>
AttentionSnapshot take_snapshot(nn::Module<T>& model, const RunLoss<T>& probe_loss, std::size_t step) {
  const bool was_training = model.is_training();
  struct ModeRestored {
    nn::Module<T>& model;
    bool training;
    ~ModeRestored() { model.train(training); }
  } mode{model, was_training};
  GradientsRestored<T> gradients(model);
  model.eval();
  return snapshot_of(capture_attention(model, probe_loss), step);
}

void save_snapshots(const fs::path& path, const std::vector<AttentionSnapshot>& snapshots) {
  constexpr const char* op = "save_snapshots";
  if (snapshots.empty()) fail(op, path, "no snapshots to save");
  nn::StateDict<float> tensors;
  nn::Metadata metadata{{"format", kFormat}};
  std::string steps;
  std::set<std::size_t> seen;
  for (const AttentionSnapshot& s : snapshots) {
    const std::string at = prefix(s.step);
    if (!seen.insert(s.step).second) fail(op, path, "two snapshots of step " + std::to_string(s.step));
    std::string counts;
    bool counts_differ = false;
    for (const auto& [quantity, arrays] : quantities(s)) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(arrays->size()) + " " + (quantity + 1);
      counts_differ = counts_differ || arrays->size() != s.names.size();
    }
    if (counts_differ) {
      fail(op, path,
           "the snapshot of step " + std::to_string(s.step) + " has " + std::to_string(s.names.size()) + " names but " +
               counts + " arrays");
    }
    for (std::size_t i = 0; i < s.names.size(); ++i) {
      for (const auto& [quantity, arrays] : quantities(s)) {
        const std::string key = at + "." + s.names[i] + quantity;
        if (!tensors.emplace(key, (*arrays)[i]).second) fail(op, path, "the array name '" + key + "' occurs twice");
      }
    }
    if (!steps.empty()) steps += ',';
    steps += std::to_string(s.step);
    metadata[at + ".loss"] = exact_text(s.loss);
    metadata[at + ".names"] = nlohmann::json(s.names).dump();
  }
  metadata["steps"] = steps;
  try {
    nn::save_safetensors(path, tensors, metadata);
  } catch (const ValueError& e) {
    fail(op, path, e.what());
  }
}

std::vector<AttentionSnapshot> load_snapshots(const fs::path& path) {
  constexpr const char* op = "load_snapshots";
  nn::SafetensorsFile<float> file = nn::load_safetensors<float>(path);
  const auto meta = [&](const std::string& key) -> const std::string& {
    const auto it = file.metadata.find(key);
    if (it == file.metadata.end()) fail(op, path, "no __metadata__ '" + key + "' (not a save_snapshots file)");
    return it->second;
  };
  const std::string& format = meta("format");
  if (format != kFormat && format != kFormatV1) {
    fail(op, path, "format '" + format + "' is neither '" + kFormat + "' nor '" + kFormatV1 + "'");
  }
  const std::size_t stored = format == kFormatV1 ? 2 : 4;  // the quantities the file holds
  std::vector<AttentionSnapshot> out;
  const std::string& steps = meta("steps");
  for (std::size_t begin = 0; begin <= steps.size();) {
    const std::size_t end = std::min(steps.find(',', begin), steps.size());
    AttentionSnapshot s;
    const auto [stop, ec] = std::from_chars(steps.data() + begin, steps.data() + end, s.step);
    if (ec != std::errc() || stop != steps.data() + end) fail(op, path, "steps '" + steps + "' is not a list of integers");
    const std::string at = prefix(s.step);
    const std::string& loss = meta(at + ".loss");
    const auto [loss_end, loss_ec] = std::from_chars(loss.data(), loss.data() + loss.size(), s.loss);
    if (loss_ec != std::errc() || loss_end != loss.data() + loss.size()) {
      fail(op, path, "'" + at + ".loss' = '" + loss + "' is not a number");
    }
    const nlohmann::json names = nlohmann::json::parse(meta(at + ".names"), nullptr, false);
    if (!names.is_array()) fail(op, path, "'" + at + ".names' is not a JSON array");
    const auto stored_arrays = quantities(s);
    for (const auto& name : names) {
      if (!name.is_string()) fail(op, path, "'" + at + ".names' holds a non-string");
      s.names.push_back(name.get<std::string>());
      for (const auto& [quantity, arrays] : std::span(stored_arrays).first(stored)) {
        const auto it = file.tensors.find(at + "." + s.names.back() + quantity);
        if (it == file.tensors.end()) fail(op, path, "no array '" + at + "." + s.names.back() + quantity + "'");
        arrays->push_back(std::move(it->second));
      }
    }
    out.push_back(std::move(s));
    begin = end + 1;
  }
  return out;
}

template AttentionSnapshot snapshot_of(const AttentionCapture<float>&, std::size_t);
template AttentionSnapshot snapshot_of(const AttentionCapture<double>&, std::size_t);
template AttentionSnapshot take_snapshot(nn::Module<float>&, const RunLoss<float>&, std::size_t);
template AttentionSnapshot take_snapshot(nn::Module<double>&, const RunLoss<double>&, std::size_t);

}  // namespace tapegrad::study
