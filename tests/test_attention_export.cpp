// Attention over training and export (study/training_snapshots.h, study/attention_export.h): the
// snapshot schedule, snapshots on a fixed probe batch that leave training bit for bit as it was,
// the snapshot file's round trip, and the safetensors / .npy / bertviz exports read back by
// Python (tests/interop/read_attention_export.py) and compared with the capture bit for bit.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "study/attention_export.h"
#include "study/exact_text.h"
#include "study/export_metadata.h"
#include "study/training_snapshots.h"
#include "nn/io/checkpoint.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/transformer/masks.h"
#include "nn/transformer/transformer.h"
#include "optim/sgd.h"
#include "tests/support/nn_support.h"
#include "tests/support/python.h"
#include "tests/support/reference.h"
#include "tests/support/temp_dir.h"

namespace tapegrad {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

// A two-layer Transformer (d_model 4, 2 heads) with dropout, so that a capture left in training
// mode would both change the maps and advance the dropout streams training draws from.
struct DropoutTransformer {
  Generator gen{91};
  nn::transformer::Transformer<double> model{5, 5, 10, 0, 4, 2, 8, 2, 0.1, 1e-5, gen};
  Tensor<double> w = random_tensor({2, 2, 5}, 92, false);
  // The loss of one batch: sum(log-probabilities * w) over [batch 2, target 2, vocab 5].
  Tensor<double> loss(const IndexArray& src, const IndexArray& tgt) {
    return sum(model.generator(model(src, tgt, nn::transformer::make_src_mask(src, 0),
                                     nn::transformer::make_tgt_mask(tgt, 0))) * w);
  }
  // The fixed probe batch (padded, so the masks are exercised).
  const IndexArray probe_src{{1, 2, 3}, {4, 1, 0}}, probe_tgt{{2, 3}, {1, 0}};
  study::RunLoss<double> probe = [this] { return loss(probe_src, probe_tgt); };
};

template <class T>
std::string hex_of(const xt::xarray<T>& a) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(a.data());
  for (std::size_t i = 0; i < a.size() * sizeof(T); ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

template <class T>
bool bit_equal(const xt::xarray<T>& a, const xt::xarray<T>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// What read_attention_export.py printed for `kind` and `path`; nullopt when torch is missing (only
// "safetensors" needs it).
std::optional<nlohmann::json> read_in_python(const std::string& kind, const fs::path& path) {
  const auto out = testing_support::run_python(READ_ATTENTION_EXPORT_PY, kind + " '" + path.string() + "'");
  if (!out) return std::nullopt;
  return nlohmann::json::parse(*out);
}

TEST(AttentionSnapshots, DoublingScheduleEndsWithTheLastStep) {
  EXPECT_EQ(study::doubling_schedule(0), (std::vector<std::size_t>{0}));
  EXPECT_EQ(study::doubling_schedule(1), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(study::doubling_schedule(8), (std::vector<std::size_t>{0, 1, 2, 4, 8}));
  EXPECT_EQ(study::doubling_schedule(300), (std::vector<std::size_t>{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300}));
}

TEST(AttentionSnapshots, SnapshotOfHoldsEveryRecordInForwardOrder) {
  DropoutTransformer t;
  t.model.eval();
  const auto capture = study::capture_attention(t.model, t.probe);
  const study::AttentionSnapshot s = study::snapshot_of(capture, 7);
  EXPECT_EQ(s.step, 7u);
  EXPECT_EQ(s.loss, capture.loss);
  ASSERT_EQ(s.names.size(), 6u);  // 2 encoder self, 2 x (decoder self, cross)
  for (std::size_t i = 0; i < s.names.size(); ++i) {
    EXPECT_EQ(s.names[i], capture.records[i].name);
    EXPECT_TRUE(bit_equal(s.weights[i], xt::xarray<float>(xt::cast<float>(capture.records[i].weights))));
    EXPECT_TRUE(bit_equal(s.weights_grad[i], xt::xarray<float>(xt::cast<float>(capture.records[i].weights_grad))));
    EXPECT_TRUE(bit_equal(s.scores[i], xt::xarray<float>(xt::cast<float>(capture.records[i].scores))));
    EXPECT_TRUE(bit_equal(s.scores_grad[i], xt::xarray<float>(xt::cast<float>(capture.records[i].scores_grad))));
  }
}

// The snapshot is the eval-mode capture of the probe batch, the same every time it is taken, and
// the model's mode and gradients (present or absent) come back bit for bit.
TEST(AttentionSnapshots, TakeSnapshotUsesEvalModeAndRestoresModeAndGradients) {
  DropoutTransformer t;
  std::vector<Tensor<double>> params = t.model.parameters();
  for (std::size_t i = 0; i < params.size(); i += 2) params[i].set_grad(xt::ones<double>(params[i].shape()) * double(i));
  const study::AttentionSnapshot first = study::take_snapshot(t.model, t.probe, 3);
  EXPECT_TRUE(t.model.is_training());
  for (std::size_t i = 0; i < params.size(); ++i) {
    ASSERT_EQ(params[i].has_grad(), i % 2 == 0) << i;
    if (i % 2 == 0) {
      EXPECT_TRUE(bit_equal(params[i].grad(), xt::xarray<double>(xt::ones<double>(params[i].shape()) * double(i))));
    }
  }
  const study::AttentionSnapshot second = study::take_snapshot(t.model, t.probe, 3);
  t.model.eval();
  const study::AttentionSnapshot eval = study::snapshot_of(study::capture_attention(t.model, t.probe), 3);
  for (std::size_t i = 0; i < first.names.size(); ++i) {
    EXPECT_TRUE(bit_equal(first.weights[i], second.weights[i]));
    EXPECT_TRUE(bit_equal(first.weights_grad[i], second.weights_grad[i]));
    EXPECT_TRUE(bit_equal(first.weights[i], eval.weights[i]));
  }
}

// Six SGD steps on fresh batches, snapshots at 0, 1, 2, 4 (taken between backward and the
// optimiser step, where the gradients matter) and 6: the parameters end bit-identical to the
// same run without snapshots.
TEST(AttentionSnapshots, TrainingWithSnapshotsIsBitIdenticalToTrainingWithout) {
  const auto train = [](bool snapshots) {
    DropoutTransformer t;
    optim::SGD<double> sgd(t.model.named_parameters(), {.lr = 0.1});
    const std::vector<std::size_t> schedule = study::doubling_schedule(6);
    std::vector<study::AttentionSnapshot> taken;
    for (std::size_t step = 0; step < 6; ++step) {
      const Index k = static_cast<Index>(step);  // a different batch every step
      const IndexArray src{{1, 2 + k % 3, 3}, {4, 1 + k % 4, 0}}, tgt{{2 + k % 2, 3}, {1 + k % 3, 0}};
      {
        GradientTape tape;
        tape.backward(t.loss(src, tgt));
      }
      if (snapshots && std::binary_search(schedule.begin(), schedule.end(), step)) {
        taken.push_back(study::take_snapshot(t.model, t.probe, step));
      }
      sgd.step();
      sgd.zero_grad();
    }
    if (snapshots) {
      taken.push_back(study::take_snapshot(t.model, t.probe, 6));
      EXPECT_EQ(taken.size(), schedule.size());
    }
    return t.model.state_dict();
  };
  const auto with = train(true), without = train(false);
  ASSERT_EQ(with.size(), without.size());
  for (const auto& [name, value] : without) EXPECT_TRUE(bit_equal(with.at(name), value)) << name;
}

TEST(AttentionSnapshots, SaveLoadRoundTripsBitForBit) {
  DropoutTransformer t;
  std::vector<study::AttentionSnapshot> saved{study::take_snapshot(t.model, t.probe, 0),
                                              study::take_snapshot(t.model, t.probe, 16)};
  saved[1].loss = 0.1;  // not a float: the loss must round-trip as a double
  TempDir dir;
  study::save_snapshots(dir.path() / "snapshots.safetensors", saved);
  const auto loaded = study::load_snapshots(dir.path() / "snapshots.safetensors");
  ASSERT_EQ(loaded.size(), 2u);
  for (std::size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(loaded[s].step, saved[s].step);
    EXPECT_EQ(loaded[s].loss, saved[s].loss);
    ASSERT_EQ(loaded[s].names, saved[s].names);
    for (std::size_t i = 0; i < saved[s].names.size(); ++i) {
      EXPECT_TRUE(bit_equal(loaded[s].weights[i], saved[s].weights[i]));
      EXPECT_TRUE(bit_equal(loaded[s].weights_grad[i], saved[s].weights_grad[i]));
      EXPECT_TRUE(bit_equal(loaded[s].scores[i], saved[s].scores[i]));
      EXPECT_TRUE(bit_equal(loaded[s].scores_grad[i], saved[s].scores_grad[i]));
    }
  }
}

// A version 1 file (A and dL/dA only, as written before S and dL/dS were kept) still loads: its
// snapshots have no scores. A snapshot missing some of its arrays is not saved.
TEST(AttentionSnapshots, LoadsAVersion1FileAndSavesOnlyWholeSnapshots) {
  DropoutTransformer t;
  study::AttentionSnapshot s = study::take_snapshot(t.model, t.probe, 2);
  nn::StateDict<float> tensors;
  for (std::size_t i = 0; i < s.names.size(); ++i) {
    tensors.emplace("step2." + s.names[i] + ".weights", s.weights[i]);
    tensors.emplace("step2." + s.names[i] + ".weights_grad", s.weights_grad[i]);
  }
  TempDir dir;
  nn::save_safetensors(dir.path() / "v1.safetensors", tensors,
                       {{"format", "tapegrad.attention_snapshots.v1"}, {"steps", "2"}, {"step2.loss", "0.5"},
                        {"step2.names", nlohmann::json(s.names).dump()}});
  const auto loaded = study::load_snapshots(dir.path() / "v1.safetensors");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].names, s.names);
  EXPECT_TRUE(bit_equal(loaded[0].weights_grad.back(), s.weights_grad.back()));
  EXPECT_TRUE(loaded[0].scores.empty());
  EXPECT_TRUE(loaded[0].scores_grad.empty());
  EXPECT_TRUE(throws_with<ValueError>([&] { study::save_snapshots(dir.path() / "v2.safetensors", loaded); },
                                      {"save_snapshots", "step 2 has 6 names but 6 weights, 6 weights_grad, 0 scores, "
                                                         "0 scores_grad arrays"}));
  study::save_snapshots(dir.path() / "v2.safetensors", {s});
  EXPECT_EQ(nn::load_safetensors<float>(dir.path() / "v2.safetensors").metadata.at("format"),
            "tapegrad.attention_snapshots.v2");
}

// The arrays an export must hold, spelled out from the records (not through attention_arrays,
// which the export uses): eval mode, so no dropped_weights.
std::map<std::string, xt::xarray<double>> expected_arrays(const study::AttentionCapture<double>& capture,
                                                          const study::NamedArrays<double>& extras) {
  std::map<std::string, xt::xarray<double>> out(extras.begin(), extras.end());
  for (const auto& r : capture.records) {
    out[r.name + ".scores"] = r.scores;
    out[r.name + ".weights"] = r.weights;
    out[r.name + ".scores_grad"] = r.scores_grad;
    out[r.name + ".weights_grad"] = r.weights_grad;
    out[r.name + ".may_attend"] = xt::cast<double>(r.may_attend);
  }
  return out;
}

study::AttentionCapture<double> tiny_capture(DropoutTransformer& t) {
  t.model.eval();
  return study::capture_attention(t.model, t.probe);
}

// What a study puts into every export (study/export_metadata.h), here for the probe batch.
nn::Metadata probe_metadata(const DropoutTransformer& t) {
  return study::export_metadata(t.probe_src, 12, {{"d_model", "4"}, {"heads", "2"}});
}

TEST(AttentionExport, MetadataHoldsTokensSequenceLengthStepAndModel) {
  DropoutTransformer t;
  const nn::Metadata m = probe_metadata(t);
  EXPECT_EQ(m, (nn::Metadata{{"tokens", "[[1,2,3],[4,1,0]]"},
                             {"seq_len", "3"},
                             {"step", "12"},
                             {"model.d_model", "4"},
                             {"model.heads", "2"}}));
  EXPECT_TRUE(throws_with<ShapeError>([] { study::export_metadata(IndexArray{1, 2}, 0, {}); },
                                      {"export_metadata", "[batch, seq]", "[2]"}));
}

TEST(AttentionExport, SafetensorsLoadsInPyTorchBitForBit) {
  DropoutTransformer t;
  const auto capture = tiny_capture(t);
  const study::NamedArrays<double> extras{{"rollout", xt::xarray<double>{{0.25, 0.75}, {1.0, 0.0}}}};
  TempDir dir;
  study::save_attention_safetensors(dir.path() / "attention.safetensors", capture, extras, probe_metadata(t));
  // The metadata, read without torch.
  const nn::Metadata stored = nn::load_safetensors<double>(dir.path() / "attention.safetensors").metadata;
  for (const auto& [key, value] : probe_metadata(t)) EXPECT_EQ(stored.at(key), value) << key;
  EXPECT_EQ(stored.count("loss"), 1u);
  const auto read = read_in_python("safetensors", dir.path() / "attention.safetensors");
  if (!read) GTEST_SKIP() << "python3-torch is not installed";
  const auto arrays = expected_arrays(capture, extras);
  ASSERT_EQ((*read)["tensors"].size(), arrays.size());  // 6 records x 5 arrays + the extra
  for (const auto& [name, array] : arrays) {
    const auto& tensor = (*read)["tensors"].at(name);
    EXPECT_EQ(tensor["dtype"], "torch.float64") << name;
    EXPECT_EQ(tensor["shape"].get<std::vector<std::size_t>>(), std::vector<std::size_t>(array.shape().begin(), array.shape().end())) << name;
    EXPECT_EQ(tensor["hex"], hex_of(array)) << name;
  }
  EXPECT_EQ(nlohmann::json::parse((*read)["metadata"]["records"].get<std::string>()).size(), capture.records.size());
}

TEST(AttentionExport, NpyFilesLoadWithTheirShapesAndValues) {
  DropoutTransformer t;
  const auto capture = tiny_capture(t);
  TempDir dir;
  study::save_attention_npy(dir.path() / "npy", capture, {{"flow", xt::xarray<double>{1.0, 2.0, 3.0}}},
                            probe_metadata(t));
  const auto read = read_in_python("npy", dir.path() / "npy");
  ASSERT_TRUE(read);  // plain Python: no skip
  // metadata.json beside the arrays: the safetensors file's metadata.
  nlohmann::json records = nlohmann::json::array();
  for (const auto& r : capture.records) records.push_back(r.name);
  nn::Metadata expected_metadata = probe_metadata(t);
  expected_metadata["loss"] = study::exact_text(capture.loss);
  expected_metadata["records"] = records.dump();
  EXPECT_EQ((*read)["metadata"], nlohmann::json(expected_metadata));
  const auto arrays = expected_arrays(capture, {{"flow", xt::xarray<double>{1.0, 2.0, 3.0}}});
  ASSERT_EQ((*read)["arrays"].size(), arrays.size());
  for (const auto& [name, array] : arrays) {
    const auto& file = (*read)["arrays"].at(name);
    EXPECT_EQ(file["descr"], "<f8") << name;
    EXPECT_EQ(file["shape"].get<std::vector<std::size_t>>(), std::vector<std::size_t>(array.shape().begin(), array.shape().end())) << name;
    EXPECT_EQ(file["hex"], hex_of(array)) << name;
  }
}

// Every sequence of the batch (the probe batch has two), each with its own tokens, and the
// metadata.
TEST(AttentionExport, BertvizJsonHasTheHeadViewStructureOfEverySequence) {
  DropoutTransformer t;
  const auto capture = tiny_capture(t);
  TempDir dir;
  const study::SequenceTokens src{{"<s>", "a", "b"}, {"c", "<s>", "-"}}, tgt{{"a", "b"}, {"<s>", "-"}};
  study::save_bertviz_json(dir.path() / "bertviz.json", capture, src, tgt, probe_metadata(t));
  const auto read = read_in_python("bertviz", dir.path() / "bertviz.json");
  ASSERT_TRUE(read);  // plain Python: no skip
  ASSERT_EQ((*read)["sequences"].size(), 2u);
  for (std::size_t b = 0; b < 2; ++b) {
    SCOPED_TRACE(b);
    const auto& sequence = (*read)["sequences"][b];
    EXPECT_EQ(sequence["keys"],
              nlohmann::json({"attention", "default_filter", "heads", "include_layers", "layer", "root_div_id"}));
    EXPECT_EQ(sequence["default_filter"], "0");
    EXPECT_EQ(sequence["include_layers"], nlohmann::json({0, 1}));
    const auto& entries = sequence["entries"];
    ASSERT_EQ(entries.size(), 3u);
    const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>> expected{
        {"Encoder", src[b], src[b]}, {"Decoder", tgt[b], tgt[b]}, {"Cross", tgt[b], src[b]}};
    for (std::size_t i = 0; i < 3; ++i) {
      const auto& [name, left, right] = expected[i];
      EXPECT_EQ(entries[i]["name"], name);
      EXPECT_EQ(entries[i]["dims"], nlohmann::json({2, 2, left.size(), right.size()})) << name;  // layers x heads x seq x seq
      EXPECT_EQ(entries[i]["left"], nlohmann::json(left)) << name;
      EXPECT_EQ(entries[i]["right"], nlohmann::json(right)) << name;
      EXPECT_TRUE(entries[i]["row_sums_ok"].get<bool>()) << name;
    }
  }
  EXPECT_EQ((*read)["metadata"]["tokens"], "[[1,2,3],[4,1,0]]");
  // Batch element 1 of the cross attention of layer 0, head 1, query 0, as floats.
  std::ifstream in(dir.path() / "bertviz.json");
  const auto exported = nlohmann::json::parse(in);
  EXPECT_EQ(exported["sequences"][1]["attention"][2]["attn"][0][1][0][2].get<float>(),
            static_cast<float>(capture.at("decoder.decoder_layers.0.src_tgt_attention").weights(1, 1, 0, 2)));

  Generator gen(94);
  nn::labml::MultiHeadAttention<double> mha(2, 4, gen, 0.0);
  const Tensor<double> x = random_tensor({3, 1, 4}, 95, false);
  const auto single = study::capture_attention(mha, [&] { return sum(mha(x, x, x)); });
  study::save_bertviz_json(dir.path() / "single.json", single, {{"x", "y", "z"}});
  const auto one = read_in_python("bertviz", dir.path() / "single.json");
  ASSERT_TRUE(one);
  ASSERT_EQ((*one)["sequences"].size(), 1u);
  const auto& entries = (*one)["sequences"][0]["entries"];
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0]["name"].is_null());
  EXPECT_EQ(entries[0]["dims"], nlohmann::json({1, 2, 3, 3}));
}

// A failed export names the function and the path and leaves nothing behind. The "directory"
// is a regular file, so the write fails even for root.
TEST(AttentionExport, UnwritablePathLeavesNothingHalfWritten) {
  DropoutTransformer t;
  const auto capture = tiny_capture(t);
  TempDir dir;
  const fs::path file = dir.path() / "file";
  std::ofstream(file) << "not a directory";
  const auto expect_named_failure = [&](const std::function<void()>& write, const std::string& op) {
    try {
      write();
      ADD_FAILURE() << op << " did not throw";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(op + "('" + file.string() + "/"), std::string::npos) << e.what();
    }
  };
  expect_named_failure([&] { study::save_attention_safetensors(file / "a.safetensors", capture); },
                       "save_attention_safetensors");
  const study::SequenceTokens src{{"<s>", "a", "b"}, {"<s>", "a", "b"}}, tgt{{"a", "b"}, {"a", "b"}};
  expect_named_failure([&] { study::save_bertviz_json(file / "b.json", capture, src, tgt); }, "save_bertviz_json");
  expect_named_failure([&] { study::save_attention_npy(file / "npy", capture); }, "save_attention_npy");
  expect_named_failure([&] { study::save_snapshots(file / "s.safetensors", {study::snapshot_of(capture, 0)}); },
                       "save_snapshots");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);  // only "file"
}

}  // namespace
}  // namespace tapegrad
