// attention_study with the study batch given as tokens (--tokens, --tokens-file), and the Python
// side of its exports: examples/attention_study/load_study.py, run with /usr/bin/python3 on a real
// output, against the exports read here (nn::load_safetensors), bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/io/checkpoint.h"
#include "tests/attention_study/support.h"
#include "tests/support/python.h"

namespace {

namespace fs = std::filesystem;
using namespace tapegrad::attention_study_test;

constexpr std::size_t kGivenLayers = 2, kGivenHeads = 2;
const std::string kGivenSizeFlags =
    " --layers 2 --heads 2 --d-model 8 --d-ff 16 --batch 8 --warmup 20 --seed 3 --threads 1";
// Two sequences of 5 tokens, no --seq-len: it follows them.
const std::string kGivenTokens = "1 5 7 3 2; 1 9 2 4 10";
const std::vector<std::vector<int>> kGivenRows = {{1, 5, 7, 3, 2}, {1, 9, 2, 4, 10}};
// Sequence 1 as bertviz labels: the encoder's input, and the decoder's (without the last token).
const std::vector<std::string> kEncoderLabels = {"<s>", "9", "2", "4", "10"};
const std::vector<std::string> kDecoderLabels = {"<s>", "9", "2", "4"};

Result run_given_study(const std::string& args, const fs::path& log) {
  return run(std::string("timeout 120 '") + ATTENTION_STUDY_EXE + "'" + kGivenSizeFlags + args, log);
}

// The study of kGivenTokens, trained here for 20 steps, with its checkpoint; and a checkpoint of
// the same model and steps trained at --seq-len 7. Made once per process.
struct GivenStudy {
  fs::path dir, out, checkpoint, checkpoint_seq_len_7;
};

const GivenStudy& given_study() {
  static TempDir dir;
  static const GivenStudy study = [] {
    GivenStudy s{dir.path(), dir.path() / "out", dir.path() / "seq5.safetensors", dir.path() / "seq7.safetensors"};
    const Result trained = run_given_study(" --steps 20 --tokens '" + kGivenTokens + "' --out '" + s.out.string() +
                                               "' --save-checkpoint '" + s.checkpoint.string() + "'",
                                           dir.path() / "log1");
    if (trained.status != 0) ADD_FAILURE() << "attention_study exited with " << trained.status << ":\n" << trained.output;
    const Result other = run_given_study(" --steps 20 --seq-len 7 --sequences 1 --no-circuit --no-snapshots --out '" +
                                             (dir.path() / "seq7").string() + "' --save-checkpoint '" +
                                             s.checkpoint_seq_len_7.string() + "'",
                                         dir.path() / "log2");
    if (other.status != 0) ADD_FAILURE() << "attention_study exited with " << other.status << ":\n" << other.output;
    return s;
  }();
  return study;
}

nlohmann::json metadata_tokens(const fs::path& safetensors) {
  return nlohmann::json::parse(tapegrad::nn::load_safetensors<float>(safetensors).metadata.at("tokens"));
}

TEST(AttentionStudyTokens, PageAndExportsHoldExactlyTheGivenTokens) {
  const fs::path& out = given_study().out;
  const tapegrad::nn::Metadata metadata = tapegrad::nn::load_safetensors<float>(out / "attention.safetensors").metadata;
  EXPECT_EQ(nlohmann::json::parse(metadata.at("tokens")), nlohmann::json(kGivenRows));
  EXPECT_EQ(metadata.at("seq_len"), "5");  // followed the tokens
  EXPECT_EQ(nlohmann::json::parse(read_text(out / "npy" / "metadata.json")), nlohmann::json(metadata));
  const auto bertviz = nlohmann::json::parse(read_text(out / "bertviz.json"));
  ASSERT_EQ(bertviz["sequences"].size(), 2u);
  EXPECT_EQ(bertviz["sequences"][1]["attention"][0]["left_text"], nlohmann::json(kEncoderLabels));
  const std::string html = read_text(out / "index.html");
  EXPECT_NE(html.find(R"("key_tokens":[["s","5","7","3","2"],["s","9","2","4","10"]])"), std::string::npos);
  EXPECT_NE(html.find("2 sequences (given by --tokens)"), std::string::npos);
}

// A file of the same sequences (a blank line and a CRLF line end among them), studied with the
// checkpoint of the run above: the same batch, the same maps.
TEST(AttentionStudyTokens, ATokensFileStudiesTheSameBatch) {
  const GivenStudy& given = given_study();
  TempDir dir;
  const fs::path file = dir.path() / "tokens.txt";
  std::ofstream(file) << "1 5 7 3 2\r\n\n  1 9 2 4 10\n";
  const fs::path out = dir.path() / "out";
  const Result r = run_given_study(" --no-circuit --tokens-file '" + file.string() + "' --checkpoint '" +
                                       given.checkpoint.string() + "' --out '" + out.string() + "'",
                                   dir.path() / "log");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(metadata_tokens(out / "attention.safetensors"), nlohmann::json(kGivenRows));
  const auto from_file = tapegrad::nn::load_safetensors<float>(out / "attention.safetensors").tensors;
  const auto from_flag = tapegrad::nn::load_safetensors<float>(given.out / "attention.safetensors").tensors;
  const std::string weights = "decoder.decoder_layers.1.src_tgt_attention.weights";
  EXPECT_EQ(from_file.at(weights), from_flag.at(weights));
  EXPECT_NE(read_text(out / "index.html").find("(read from --tokens-file " + file.string() + ")"), std::string::npos);
}

// load_study.py's command line on the study, stdout and stderr apart.
struct LoadStudyRun {
  int status;
  std::string out, err;
};

LoadStudyRun run_load_study(const std::string& args, const fs::path& dir) {
  const fs::path err = dir / "load_study.err";
  const Result r = run("(/usr/bin/python3 '" LOAD_STUDY_PY "' " + args + " 2> '" + err.string() + "')",
                       dir / "load_study.out");
  return {r.status, r.output, read_text(err)};
}

// Expects described ({"shape", "values"}, check_load_study.py) to be `shape` holding exactly values.
void expect_described_array(const nlohmann::json& described, const std::vector<std::size_t>& shape,
                            const float* values, const std::string& what) {
  EXPECT_EQ(described["shape"].get<std::vector<std::size_t>>(), shape) << what;
  const auto got = described["values"].get<std::vector<float>>();
  std::size_t size = 1;
  for (const std::size_t n : shape) size *= n;
  ASSERT_EQ(got.size(), size) << what;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < size; ++i) differ += got[i] != values[i];
  EXPECT_EQ(differ, 0u) << what << ": values that differ";
}

// The module path of layer `layer`'s map of bertviz's kind ("encoder", "decoder", "cross").
std::string given_record(const std::string& kind, std::size_t layer) {
  const std::string n = std::to_string(layer);
  if (kind == "encoder") return "encoder.encoder_layers." + n + ".multi_head_attention";
  return "decoder.decoder_layers." + n + (kind == "decoder" ? ".self_attention" : ".src_tgt_attention");
}

// load_study.py loads every exported array, from attention.safetensors and from npy/, exactly; its
// head_view arguments for sequence 1 are that sequence's maps as torch tensors [1, heads, seq_q,
// seq_k] of every layer and its tokens as labels; without bertviz, it says so and writes them.
TEST(LoadStudyPy, ArraysEqualTheExportsAndHeadViewGetsItsDocumentedArguments) {
  const GivenStudy& given = given_study();
  TempDir dir;
  const fs::path prefix = dir.path() / "head_view";
  const LoadStudyRun cli = run_load_study("'" + given.out.string() + "' --checkpoint '" + given.checkpoint.string() +
                                              "' --sequence 1 --out '" + prefix.string() + "'",
                                          dir.path());
  ASSERT_EQ(cli.status, 0) << cli.out << cli.err;
  EXPECT_NE(cli.out.find("2 sequences of 5 tokens, model at step 20"), std::string::npos) << cli.out;
  const bool without_bertviz = cli.err.find("bertviz is not installed") != std::string::npos;
  EXPECT_EQ(fs::exists(prefix.string() + ".npz"), without_bertviz) << cli.err;
  EXPECT_EQ(fs::exists(prefix.string() + ".html"), !without_bertviz) << cli.err;
  if (without_bertviz) {
    EXPECT_NE(cli.err.find("head_view was not called"), std::string::npos) << cli.err;
  }

  const std::optional<std::string> printed = tapegrad::testing_support::run_python(
      CHECK_LOAD_STUDY_PY, "'" + given.out.string() + "' 1 '" + prefix.string() + "'");
  if (!printed) GTEST_SKIP() << "python3-torch is not installed";
  const nlohmann::json loaded = nlohmann::json::parse(*printed);
  const auto exported = tapegrad::nn::load_safetensors<float>(given.out / "attention.safetensors").tensors;
  for (const char* source : {"safetensors", "npy"}) {
    ASSERT_EQ(loaded["sources"][source].size(), exported.size()) << source;
    for (const auto& [name, values] : exported) {
      ASSERT_TRUE(loaded["sources"][source].contains(name)) << source << " lacks " << name;
      expect_described_array(loaded["sources"][source][name], {values.shape().begin(), values.shape().end()},
                             values.data(), std::string(source) + " " + name);
    }
  }
  EXPECT_EQ(loaded["tokens"], nlohmann::json(kGivenRows));
  EXPECT_EQ(loaded["seq_len"], 5);
  EXPECT_EQ(loaded["step"], 20);

  // [1, heads, seq_q, seq_k]: the decoder reads the sequence without its last token.
  const std::vector<std::pair<std::string, std::vector<std::size_t>>> kinds = {
      {"encoder", {1, kGivenHeads, 5, 5}}, {"decoder", {1, kGivenHeads, 4, 4}}, {"cross", {1, kGivenHeads, 4, 5}}};
  std::vector<std::string> argument_sets = {"head_view"};
  if (without_bertviz) argument_sets.push_back("written");
  for (const std::string& set : argument_sets) {
    const nlohmann::json& arguments = loaded[set];
    EXPECT_EQ(arguments["encoder_tokens"], nlohmann::json(kEncoderLabels)) << set;
    EXPECT_EQ(arguments["decoder_tokens"], nlohmann::json(kDecoderLabels)) << set;
    for (const auto& [kind, shape] : kinds) {
      const nlohmann::json& layers = arguments[kind + "_attention"];
      ASSERT_EQ(layers.size(), kGivenLayers) << set << " " << kind;
      for (std::size_t l = 0; l < kGivenLayers; ++l) {
        const auto& weights = exported.at(given_record(kind, l) + ".weights");  // [batch, heads, seq_q, seq_k]
        const float* sequence_1 = weights.data() + weights.size() / weights.shape()[0];
        expect_described_array(layers[l], shape, sequence_1, set + " " + kind + " layer " + std::to_string(l));
      }
      if (set == "head_view") {
        EXPECT_EQ(layers[0]["type"], "torch.Tensor/torch.float32") << kind;
      }
    }
  }
}

// A checkpoint trained at another sequence length than the study's gets a warning naming both
// lengths; the checkpoint the study was made from, none.
TEST(LoadStudyPy, WarnsOnlyForACheckpointOfAnotherSequenceLength) {
  const GivenStudy& given = given_study();
  TempDir dir;
  const std::string study = "'" + given.out.string() + "' --out '" + (dir.path() / "hv").string() + "'";
  const LoadStudyRun other = run_load_study(study + " --checkpoint '" + given.checkpoint_seq_len_7.string() + "'",
                                            dir.path());
  EXPECT_EQ(other.status, 0) << other.err;
  for (const char* fragment : {"load_study.py: warning:", "seq7.safetensors' was trained on sequences of 7 tokens",
                               "is of sequences of 5 tokens"})
    EXPECT_NE(other.err.find(fragment), std::string::npos) << fragment << " not in:\n" << other.err;
  EXPECT_EQ(other.err.find("at step"), std::string::npos) << other.err;  // the same step: only the length differs
  const LoadStudyRun same = run_load_study(study + " --checkpoint '" + given.checkpoint.string() + "'", dir.path());
  EXPECT_EQ(same.status, 0) << same.err;
  EXPECT_EQ(same.err.find("warning"), std::string::npos) << same.err;
}

// An export whose metadata says 6 tokens per sequence while its maps are of 5 is refused, naming
// the array and both shapes.
TEST(LoadStudyPy, RefusesAnExportWhoseTokensDoNotFitItsArrays) {
  TempDir dir;
  const fs::path study = dir.path() / "study";
  fs::create_directories(study);
  fs::copy(given_study().out / "npy", study / "npy", fs::copy_options::recursive);
  nlohmann::json metadata = nlohmann::json::parse(read_text(study / "npy" / "metadata.json"));
  nlohmann::json rows = kGivenRows;
  for (auto& row : rows) row.push_back(3);
  metadata["tokens"] = rows.dump();
  metadata["seq_len"] = "6";
  std::ofstream(study / "npy" / "metadata.json") << metadata.dump();
  const LoadStudyRun r = run_load_study("'" + study.string() + "' --source npy", dir.path());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("load_study.py: '" + (study / "npy").string() +
                       "': 'encoder.encoder_layers.0.multi_head_attention.weights' is [2, 2, 5, 5], but 2 sequences of "
                       "6 tokens and 2 heads make it [2, 2, 6, 6]"),
            std::string::npos)
      << r.err;
}

}  // namespace
