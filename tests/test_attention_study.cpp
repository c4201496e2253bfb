// End-to-end test of examples/attention_study: runs the program on a tiny configuration and
// checks what it wrote: the one self-contained page and the CSV tables. The page itself is tested
// in a browser by test_attention_page.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/attention_study/circuit.h"
#include "examples/attention_study/json.h"
#include "examples/attention_study/study.h"
#include "nn/io/checkpoint.h"
#include "nn/linear.h"
#include "tests/attention_study/support.h"
#include "tests/support/reference.h"

namespace {

namespace fs = std::filesystem;
using namespace tapegrad::attention_study_test;

// The tiny model: 2 layers so that "per layer" is exercised, 2 heads, 2 studied sequences of 5.
constexpr int kLayers = 2, kHeads = 2;
const std::string kSizeFlags =
    " --layers 2 --heads 2 --d-model 8 --d-ff 16 --seq-len 5 --batch 8 --warmup 20 --seed 3"
    " --threads 1";
const std::string kStudyFlags = " --sequences 2";

Result run_study(const std::string& args, const fs::path& log) {
  return run(std::string("timeout 120 '") + ATTENTION_STUDY_EXE + "'" + args, log);
}

// One training run of the tiny model per process, shared by the tests that only read its output.
const fs::path& trained_output() {
  static TempDir dir;
  static const fs::path out = [] {
    const fs::path o = dir.path() / "out";
    const Result r = run_study(kSizeFlags + kStudyFlags + " --steps 40 --out '" + o.string() + "'", dir.path() / "log");
    if (r.status != 0) ADD_FAILURE() << "attention_study exited with " << r.status << ":\n" << r.output;
    return o;
  }();
  return out;
}

// A CSV's first line and how many lines follow it.
std::pair<std::string, int> csv_header_and_rows(const std::string& text) {
  std::istringstream lines(text);
  std::string header, line;
  std::getline(lines, header);
  int rows = 0;
  while (std::getline(lines, line)) ++rows;
  return {header, rows};
}

TEST(AttentionStudy, WritesThePageTablesExportsAndSnapshotsNothingElse) {
  std::set<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(trained_output()))
    files.insert(fs::relative(entry.path(), trained_output()).string());
  std::set<std::string> expected{"index.html", "grad_norms.md", "grad_norms_heads.csv", "grad_norms_modules.csv",
                                  "grad_norms_sublayers.csv", "head_ablation.csv", "attention.safetensors",
                                  "bertviz.json", "snapshots.safetensors", "npy", "circuit.csv",
                                  "patching_methods.csv", "edges.csv", "edge_methods.csv", "edges_per_head.csv",
                                  "edge_methods_per_head.csv", "atp_diagnostic.csv", "positions.csv",
                                  "positions_atp.csv", "cells.csv"};
  for (const auto& f : files)
    if (f.starts_with("npy/")) expected.insert(f);  // the exports, checked below
  EXPECT_EQ(files, expected);
}

TEST(AttentionStudy, WritesExportsAndTrainingSnapshots) {
  const fs::path& out = trained_output();
  for (const char* f : {"attention.safetensors", "bertviz.json", "snapshots.safetensors",
                        "npy/encoder.encoder_layers.0.multi_head_attention.weights.npy", "npy/encoder.rollout.npy",
                        "npy/decoder.rollout.npy", "npy/decoder.gradient_weighted_rollout.npy"}) {
    EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
  }
  // The attribution maps exported are the page's, encoder's and decoder's, bit for bit.
  const auto exported = tapegrad::nn::load_safetensors<float>(out / "attention.safetensors").tensors;
  const std::string html = read_text(out / "index.html");
  for (const char* name : {"encoder.rollout", "encoder.gradient_weighted_rollout", "decoder.rollout",
                           "decoder.gradient_weighted_rollout"}) {
    const auto& values = exported.at(name);
    EXPECT_EQ(values.dimension(), 3u) << name;
    EXPECT_NE(html.find(tapegrad::attention_study::base64_float32(std::span<const float>(values.data(), values.size()))),
              std::string::npos)
        << name;
  }
  EXPECT_NE(read_text(out / "snapshots.safetensors").find(R"("steps":"0,1,2,4,8,16,32,40")"), std::string::npos);
}

// Every export holds the same metadata: the studied tokens, the model's configuration, the
// sequence length and the model's step; bertviz.json holds every sequence.
TEST(AttentionStudy, ExportsHoldTheStudysMetadataAndEverySequence) {
  const fs::path& out = trained_output();
  const tapegrad::nn::Metadata metadata = tapegrad::nn::load_safetensors<float>(out / "attention.safetensors").metadata;
  EXPECT_EQ(metadata.at("seq_len"), "5");
  EXPECT_EQ(metadata.at("step"), "40");
  EXPECT_EQ(metadata.at("model.layers"), "2");
  EXPECT_EQ(metadata.at("model.heads"), "2");
  EXPECT_EQ(metadata.at("model.d_model"), "8");
  const auto tokens = nlohmann::json::parse(metadata.at("tokens"));
  ASSERT_EQ(tokens.size(), 2u);  // --sequences 2
  EXPECT_EQ(tokens[1].size(), 5u);
  EXPECT_EQ(tokens[1][0], 1);  // the start symbol
  EXPECT_EQ(nlohmann::json::parse(read_text(out / "npy" / "metadata.json")), nlohmann::json(metadata));
  const auto bertviz = nlohmann::json::parse(read_text(out / "bertviz.json"));
  EXPECT_EQ(bertviz["metadata"], nlohmann::json(metadata));
  ASSERT_EQ(bertviz["sequences"].size(), 2u);
  EXPECT_EQ(bertviz["sequences"][1]["attention"][0]["left_text"][2], tokens[1][2].dump());
}

TEST(AttentionStudy, PageIsSelfContained) {
  const std::string html = read_text(trained_output() / "index.html");
  // Nothing is fetched: no external script, style, image or font.
  for (const char* fetch : {" src=", "<link", "url(", "@import", "https:"}) {
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  }
  // The only "http:" is the SVG namespace the loss chart is made in (a name, never fetched).
  static const std::regex http("http:[^'\"]*");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), http); it != std::sregex_iterator(); ++it)
    EXPECT_EQ(it->str(), "http://www.w3.org/2000/svg");
  EXPECT_NE(html.find(R"(<script type="application/json" id="data">{"facts")"), std::string::npos);
  // The data hold every attention call under its one name, and the loss of every step.
  for (const char* name : {"\"enc1 self\"", "\"dec0 self\"", "\"dec1 cross\""}) {
    EXPECT_NE(html.find(name), std::string::npos) << name;
  }
  EXPECT_NE(html.find("\"losses\":[" ), std::string::npos);
  EXPECT_EQ(html.find("\"losses\":[]"), std::string::npos);
}

TEST(AttentionStudy, WritesTablesWithARowPerHeadAndSublayer) {
  const fs::path& out = trained_output();
  std::istringstream heads(read_text(out / "grad_norms_heads.csv"));
  std::string line;
  std::getline(heads, line);
  EXPECT_EQ(line.rfind("module,head,", 0), 0u) << line;
  int rows = 0;
  while (std::getline(heads, line)) ++rows;
  EXPECT_EQ(rows, kLayers * 3 * kHeads);
  const std::string sublayers = read_text(out / "grad_norms_sublayers.csv");
  for (const char* name : {"encoder.encoder_layers.1.multi_head_attention", "encoder.encoder_layers.0.ffn",
                           "decoder.decoder_layers.1.src_tgt_attention", "generator.proj"}) {
    EXPECT_NE(sublayers.find(name), std::string::npos) << name;
  }
  EXPECT_NE(read_text(out / "grad_norms.md").find("| --- |"), std::string::npos);
  std::istringstream ablation(read_text(out / "head_ablation.csv"));
  std::getline(ablation, line);
  EXPECT_EQ(line, "module,head,loss ablated,change,name");
  rows = 0;
  while (std::getline(ablation, line)) ++rows;
  EXPECT_EQ(rows, kLayers * 3 * kHeads);
  // The head names of the tables are the page's.
  EXPECT_NE(read_text(out / "head_ablation.csv").find(",dec1 cross h1\n"), std::string::npos);
}

// The circuit study: a row per head and point (z, q, k) with every method's share, and a row per
// method whose agreement with exact patching is a correlation; the output prints the table.
TEST(AttentionStudy, WritesTheCircuitStudyWithEveryMethodAgainstExactPatching) {
  const fs::path& out = trained_output();
  std::istringstream circuit(read_text(out / "circuit.csv"));
  std::string line;
  std::getline(circuit, line);
  EXPECT_EQ(line, "name,point,head,exact,AtP,AtP + QK fix,AtP + second order,GradDrop,\"EAP-IG on activations, m=8\","
                  "\"EAP-IG on inputs, m=8\"");
  int rows = 0;
  while (std::getline(circuit, line)) ++rows;
  EXPECT_EQ(rows, 3 * kLayers * 3 * kHeads);
  EXPECT_NE(read_text(out / "circuit.csv").find("dec1 cross h1 z,decoder.decoder_layers.1.src_tgt_attention.hook_z,1,"),
            std::string::npos);
  std::istringstream methods(read_text(out / "patching_methods.csv"));
  std::getline(methods, line);
  EXPECT_EQ(line, "method,seconds,Pearson,Spearman,top-k recall,k");
  std::getline(methods, line);
  EXPECT_EQ(line.rfind("exact patching,", 0), 0u) << line;
  rows = 0;
  while (std::getline(methods, line)) {
    ++rows;
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream fields(line.substr(line.rfind('"') == std::string::npos ? 0 : line.rfind('"') + 1));
    while (std::getline(fields, cell, ',')) cells.push_back(cell);
    ASSERT_GE(cells.size(), 4u) << line;
    const double pearson = std::stod(cells[cells.size() - 4]);
    EXPECT_GE(pearson, -1.0) << line;
    EXPECT_LE(pearson, 1.0) << line;
  }
  EXPECT_EQ(rows, 6);

  // Two layers of two heads: 86 edges (EdgePatching.EdgesAreTheConnectionsTheArchitectureHas
  // counts them), each with its exact, EAP and EAP-IG share.
  const std::string edges = read_text(out / "edges.csv");
  EXPECT_EQ(csv_header_and_rows(edges), std::make_pair(std::string("sender,receiver,exact,EAP,EAP-IG"), 86));
  EXPECT_NE(edges.find("\nenc emb,dec1 cross v,"), std::string::npos);
  EXPECT_NE(edges.find("\ndec1 cross h1,dec1 output,"), std::string::npos);
  EXPECT_EQ(csv_header_and_rows(read_text(out / "edge_methods.csv")),
            std::make_pair(std::string("method,seconds,Pearson,Spearman,top-k recall,k"), 3));
}

// The receivers split into heads: each of the 75 edges into an attention input becomes one per
// head (EdgePatching.EAPIsTheDerivativeOfPathPatchingAlongThePatch counts them), and a head reads
// its input through its own slice of the projection, so the heads' EAP shares add up to the
// whole input's in edges.csv.
TEST(AttentionStudy, EdgesIntoEachHeadAddUpToTheWholeInputsByEAP) {
  const fs::path& out = trained_output();
  const auto shares = [](const std::string& text) {
    std::map<std::string, double> eap;  // "<sender>|<receiver without its head>" -> summed EAP share
    std::istringstream lines(text);
    std::string line;
    std::getline(lines, line);
    while (std::getline(lines, line)) {
      std::vector<std::string> cells;
      std::istringstream fields(line);
      for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
      std::string receiver = cells.at(1);
      const auto head = receiver.find(" h");
      if (head != std::string::npos) receiver.erase(head, receiver.find(' ', head + 1) - head);
      eap[cells.at(0) + "|" + receiver] += std::stod(cells.at(3));
    }
    return eap;
  };
  const std::string per_head = read_text(out / "edges_per_head.csv");
  EXPECT_EQ(csv_header_and_rows(per_head), std::make_pair(std::string("sender,receiver,exact,EAP,EAP-IG"), 2 * 75 + 11));
  EXPECT_NE(per_head.find("\nenc emb,dec1 cross h1 v,"), std::string::npos);
  const auto summed = shares(per_head);
  const auto whole = shares(read_text(out / "edges.csv"));
  ASSERT_EQ(summed.size(), whole.size());
  for (const auto& [edge, share] : whole) EXPECT_NEAR(summed.at(edge), share, 1e-4 * (1 + std::abs(share))) << edge;
  EXPECT_EQ(csv_header_and_rows(read_text(out / "edge_methods_per_head.csv")).second, 3);
}

// AtP*'s subset diagnostic of the AtP column: a row per head-study row outside AtP's top 10, and a
// row is ruled out exactly when its bound falls below the threshold, so every bound of a row kept
// is above every bound of a row ruled out.
TEST(AttentionStudy, TheSubsetDiagnosticRulesOutTheRowsBelowItsThreshold) {
  std::istringstream rows(read_text(trained_output() / "atp_diagnostic.csv"));
  std::string line;
  std::getline(rows, line);
  EXPECT_EQ(line, "name,exact,AtP,bound,ruled out");
  double lowest_kept = INFINITY, highest_ruled_out = 0;
  int count = 0, kept = 0;
  while (std::getline(rows, line)) {
    ++count;
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    ASSERT_EQ(cells.size(), 5u) << line;
    const double bound = cells[3] == "inf" ? INFINITY : std::stod(cells[3]);
    EXPECT_GE(bound, 0.0) << line;
    if (cells[4] == "no") {
      ++kept;
      lowest_kept = std::min(lowest_kept, bound);
    } else {
      EXPECT_EQ(cells[4], "yes") << line;
      highest_ruled_out = std::max(highest_ruled_out, bound);
    }
  }
  EXPECT_EQ(count, 3 * kLayers * 3 * kHeads - 10);
  EXPECT_GT(count - kept, 0) << "with bounds from 64 subsets some rows must be ruled out";
  EXPECT_GT(lowest_kept, highest_ruled_out);
}

// AtP's top rows without an exact effect set no threshold: the diagnostic is skipped and says so,
// without running a forward (the model is never called); a comparison without its AtP column is
// refused.
TEST(AttentionStudy, TheSubsetDiagnosticIsSkippedWhenNoVerifiedRowHasAnEffect) {
  namespace study = tapegrad::study;
  tapegrad::Generator gen(3);
  tapegrad::nn::Linear<float> never_run(2, 2, gen);
  study::PatchingComparison comparison;
  comparison.exact.target_metric = 1.0;
  comparison.exact.rows = {{"p", 0, {0}, 1.0}, {"p", 1, {1}, 1.0}};  // both patches leave the metric as it was
  comparison.methods.push_back({"AtP", {0.5, -0.2}, 0.0, {}});
  const study::RunLoss<float> run = [] { return tapegrad::Tensor<float>::zeros({1}); };
  const auto d = tapegrad::attention_study::atp_diagnostic(never_run, run, study::ActivationCache<float>{}, comparison);
  EXPECT_EQ(d.verified.size(), 2u);
  EXPECT_TRUE(d.subsets.rows.empty());
  EXPECT_NE(tapegrad::attention_study::atp_diagnostic_summary(d, 1.0).find("skipped"), std::string::npos);
  comparison.methods.front().method = "GradDrop";
  EXPECT_TRUE(tapegrad::throws_with<tapegrad::ValueError>(
      [&] { tapegrad::attention_study::atp_diagnostic(never_run, run, study::ActivationCache<float>{}, comparison); },
      {"atp_diagnostic: the comparison has no AtP column"}));
}

// The residual stream position by position: a row per layer input and stack output, a column per
// position. The metric is a mean over target positions of a score read at that position alone, so
// the decoder's output patched position by position recovers the whole gap in total.
TEST(AttentionStudy, PositionSweepOfTheDecodersOutputAddsUpToTheWholeGap) {
  std::istringstream positions(read_text(trained_output() / "positions.csv"));
  std::string line;
  std::getline(positions, line);
  EXPECT_EQ(line, "stream,pos 0,pos 1,pos 2,pos 3,pos 4");
  std::vector<std::string> names;
  double decoder_output_total = 0;
  while (std::getline(positions, line)) {
    std::istringstream fields(line);
    std::string cell;
    std::getline(fields, cell, ',');
    names.push_back(cell);
    std::size_t cells = 0;
    while (std::getline(fields, cell, ',')) {
      ++cells;
      if (names.back() == "dec out") decoder_output_total += std::stod(cell);
    }
    // The encoder reads the 5 tokens; the decoder 4 (its input), then a blank cell.
    EXPECT_EQ(cells, names.back().starts_with("enc") ? 5u : 4u) << line;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"enc0 in", "enc1 in", "enc out", "dec0 in", "dec1 in", "dec out"}));
  EXPECT_NEAR(decoder_output_total, 1.0, 1e-4);
}

// The cell sweep patches the module whose heads' z patches recover the most of the gap in
// circuit.csv, every cell once in row-major order: 2 heads x 5 x 5 cells for an encoder module,
// 2 x 4 x 5 for a decoder cross-attention (its queries are the decoder's 4 input tokens, its keys
// the 5 source tokens), 2 x 4 x 4 for a decoder self-attention, its masked cells included (their
// shares are 0: CellSweepAtPIsTheCellsChangeTimesTheGradient). The output prints the largest.
TEST(AttentionStudy, CellSweepPatchesEveryCellOfTheModuleWhoseHeadsCarryMost) {
  std::map<std::string, double> z_share;  // per module short name, summed over its heads
  for (const auto& row : csv_cells(read_text(trained_output() / "circuit.csv"))) {
    if (row.size() > 3 && row[0].ends_with(" z")) z_share[row[0].substr(0, row[0].rfind(" h"))] += std::stod(row[3]);
  }
  ASSERT_EQ(z_share.size(), 3u * kLayers);
  const std::string module =
      std::max_element(z_share.begin(), z_share.end(), [](const auto& a, const auto& b) { return a.second < b.second; })
          ->first;
  const std::vector<std::vector<std::string>> cells = csv_cells(read_text(trained_output() / "cells.csv"));
  ASSERT_FALSE(cells.empty());
  EXPECT_EQ(cells[0], (std::vector<std::string>{"module", "head", "query", "key", "exact", "AtP"}));
  const bool decoder_self = module.starts_with("dec") && module.ends_with(" self");
  const std::size_t queries = module.starts_with("enc") ? 5 : 4, keys = decoder_self ? 4 : 5;
  ASSERT_EQ(cells.size(), 1 + kHeads * queries * keys) << module;
  for (std::size_t i = 1; i < cells.size(); ++i) {
    const std::size_t cell = i - 1;
    const std::vector<std::string> where = {module, std::to_string(cell / (queries * keys)),
                                            std::to_string(cell / keys % queries), std::to_string(cell % keys)};
    ASSERT_EQ(std::vector<std::string>(cells[i].begin(), cells[i].begin() + 4), where) << i;
  }
  const std::string log = read_text(trained_output().parent_path() / "log");
  EXPECT_NE(log.find(" keys) of " + module + " the same way; AtP against exact patching over the "), std::string::npos)
      << log;
  EXPECT_NE(log.find(module + " is the module whose heads' z patches recover the most."), std::string::npos) << log;
  EXPECT_NE(log.find("| module | head | query | key | exact | AtP |"), std::string::npos) << log;
}

// An untrained copy-task model (2 layers of 2 heads, d_model 8) and two sequences of 5 tokens.
struct SmallStudy {
  tapegrad::copy_task::Config config = [] {
    tapegrad::copy_task::Config c;
    c.d_model = 8;
    c.d_ff = 16;
    c.heads = 2;
    c.seq_len = 5;
    return c;
  }();
  tapegrad::Generator gen{3}, data_gen{4};
  std::unique_ptr<tapegrad::nn::transformer::Transformer<float>> model = tapegrad::copy_task::make_model<float>(config, gen);
  tapegrad::IndexArray data = tapegrad::copy_task::random_sequences(2, 5, config.vocab, data_gen);
};

// Every cell of the decoder's first self-attention on the circuit study's runs: AtP of a cell is
// (A_clean - A_corrupted) * d metric / dA summed over the sequences, recomputed here from
// run_with_cache's gradient. The cells the causal mask forbids (key after query) and the first
// query's one key (A = 1 in every run) are the same in both runs: patching them recovers exactly
// nothing, AtP says 0, and the agreement leaves them out.
TEST(AttentionStudy, CellSweepAtPIsTheCellsChangeTimesTheGradient) {
  SmallStudy small;
  auto& model = *small.model;
  model.eval();
  const auto runs = tapegrad::attention_study::copy_runs(model, small.data, small.config.vocab, 7);
  const std::string module = "decoder.decoder_layers.0.self_attention", point = module + ".hook_pattern";
  const auto sweep = tapegrad::attention_study::cell_sweep(model, runs.clean, runs.corrupted, module, "dec0 self");
  ASSERT_TRUE(sweep.swept);
  ASSERT_EQ(sweep.exact.rows.size(), 2u * 4 * 4);
  ASSERT_EQ(sweep.atp.rows.size(), sweep.exact.rows.size());
  const auto clean = tapegrad::study::run_with_cache<float>(model, runs.clean, {point});
  const auto corrupted = tapegrad::study::run_with_cache<float>(model, runs.corrupted, {point},
                                                                tapegrad::study::CacheGradients::kYes);
  const xt::xarray<float>& a_clean = clean.value(point);
  const xt::xarray<float>& a_corrupted = corrupted.value(point);
  const xt::xarray<float>& grad = corrupted.grad(point);
  const tapegrad::attention_study::Table table = tapegrad::attention_study::cell_table(sweep);
  std::size_t unchanged = 0;
  for (std::size_t i = 0; i < sweep.exact.rows.size(); ++i) {
    const auto& at = sweep.exact.rows[i].at;
    const std::size_t h = at[0], q = at[1], k = at[2];
    double expected = 0;
    for (std::size_t b = 0; b < a_clean.shape()[0]; ++b)
      expected += (double(a_clean(b, h, q, k)) - double(a_corrupted(b, h, q, k))) * double(grad(b, h, q, k));
    EXPECT_NEAR(sweep.atp.rows[i].atp, expected, 1e-4 * std::abs(expected) + 1e-7) << h << " " << q << " " << k;
    if (k > q || (k == 0 && q == 0)) {
      ++unchanged;
      EXPECT_EQ(sweep.exact.rows[i].metric, sweep.exact.target_metric) << h << " " << q << " " << k;
      EXPECT_EQ(std::get<double>(table.rows[i][4]), 0.0) << h << " " << q << " " << k;
      EXPECT_EQ(std::get<double>(table.rows[i][5]), 0.0) << h << " " << q << " " << k;
    }
  }
  EXPECT_EQ(unchanged, 2u * (6 + 1));
  EXPECT_EQ(sweep.unchanged, unchanged);
  EXPECT_EQ(sweep.agreement.compared, sweep.exact.rows.size() - unchanged);
}

// The loss is minus the target log-probability, so their dL/dA are opposite, element for element;
// the target logit's is another map. The loss and the ablation are the loss's whatever L is.
TEST(AttentionStudy, EveryGradientIsOfTheChosenMetric) {
  using tapegrad::attention_study::StudyMetric;
  SmallStudy small;
  auto& model = small.model;
  const tapegrad::IndexArray& data = small.data;
  const auto logit = tapegrad::attention_study::study_batch(*model, data, StudyMetric::kTargetLogit);
  const auto log_prob = tapegrad::attention_study::study_batch(*model, data, StudyMetric::kTargetLogProb);
  const auto loss = tapegrad::attention_study::study_batch(*model, data, StudyMetric::kLoss);
  EXPECT_NEAR(loss.metric_value, -log_prob.metric_value, 1e-6);
  EXPECT_EQ(loss.loss, log_prob.loss);
  EXPECT_EQ(loss.loss, logit.loss);
  EXPECT_NE(logit.metric_value, log_prob.metric_value);
  ASSERT_EQ(loss.maps.size(), logit.maps.size());
  double differs = 0;
  for (std::size_t m = 0; m < loss.maps.size(); ++m) {
    EXPECT_TRUE(xt::allclose(loss.maps[m].grad, -log_prob.maps[m].grad, 1e-5, 1e-7)) << loss.maps[m].module;
    differs = std::max(differs, double(xt::amax(xt::abs(logit.maps[m].grad - log_prob.maps[m].grad))()));
  }
  EXPECT_GT(differs, 1e-4);
  EXPECT_EQ(tapegrad::attention_study::metric_name(StudyMetric::kTargetLogit), "target logit");
}

// L at one target position: the batch's mean there, so L over all positions is the mean of L at
// each, for the value and for every dL/dA (each position's share of the same sums). A position
// past the targets is refused naming it.
TEST(AttentionStudy, TheMetricAtEachPositionAveragesToTheMetricOverAll) {
  using tapegrad::attention_study::MetricChoice;
  using tapegrad::attention_study::StudyMetric;
  SmallStudy small;
  auto& model = small.model;
  const tapegrad::IndexArray& data = small.data;
  for (const StudyMetric kind : {StudyMetric::kTargetLogit, StudyMetric::kLoss}) {
    const auto all = tapegrad::attention_study::study_batch(*model, data, kind);
    double mean_value = 0;
    std::vector<xt::xarray<float>> mean_grads;
    for (std::size_t p = 0; p < 4; ++p) {
      const auto at = tapegrad::attention_study::study_batch(*model, data, MetricChoice(kind, p));
      mean_value += at.metric_value / 4;
      for (std::size_t m = 0; m < at.maps.size(); ++m) {
        if (p == 0) mean_grads.push_back(at.maps[m].grad / 4.0f);
        else mean_grads[m] += at.maps[m].grad / 4.0f;
      }
    }
    EXPECT_NEAR(mean_value, all.metric_value, 1e-5);
    for (std::size_t m = 0; m < all.maps.size(); ++m)
      EXPECT_TRUE(xt::allclose(mean_grads[m], all.maps[m].grad, 1e-4, 1e-6)) << all.maps[m].module;
  }
  EXPECT_EQ(tapegrad::attention_study::metric_name(MetricChoice(StudyMetric::kLoss, 3)), "loss at target position 3");
  EXPECT_THROW(tapegrad::attention_study::study_batch(*model, data, MetricChoice(StudyMetric::kLoss, 4)),
               tapegrad::ValueError);
}

TEST(AttentionStudy, LoadsACheckpointAndSaysThereIsNoLossHistory) {
  TempDir dir;
  const fs::path checkpoint = dir.path() / "model.safetensors";
  const Result trained = run_study(kSizeFlags + kStudyFlags + " --steps 20 --save-checkpoint '" + checkpoint.string() +
                                       "' --out '" + (dir.path() / "trained").string() + "'",
                                   dir.path() / "log1");
  ASSERT_EQ(trained.status, 0) << trained.output;
  const Result loaded = run_study(kSizeFlags + kStudyFlags + " --checkpoint '" + checkpoint.string() + "' --out '" +
                                      (dir.path() / "loaded").string() + "'",
                                  dir.path() / "log2");
  ASSERT_EQ(loaded.status, 0) << loaded.output;
  EXPECT_EQ(loaded.output.find("warning"), std::string::npos) << loaded.output;
  const std::string html = read_text(dir.path() / "loaded" / "index.html");
  EXPECT_NE(html.find("no loss history"), std::string::npos);
  EXPECT_NE(html.find("\"losses\":[]"), std::string::npos);
  // The same parameters on the same sequences give the same maps and norms, bit for bit.
  const auto calls = [](const std::string& page) {
    const auto from = page.find("\"calls\":"), to = page.find("\"snapshots\":");
    return page.substr(from, to - from);
  };
  EXPECT_EQ(calls(html), calls(read_text(dir.path() / "trained" / "index.html")));
  EXPECT_EQ(read_text(dir.path() / "loaded" / "grad_norms_heads.csv"),
            read_text(dir.path() / "trained" / "grad_norms_heads.csv"));
}

// A checkpoint of the tiny model after one training step, written into dir.
fs::path one_step_checkpoint(const TempDir& dir) {
  const fs::path checkpoint = dir.path() / "model.safetensors";
  const Result r = run_study(kSizeFlags + " --steps 1 --sequences 1 --save-checkpoint '" + checkpoint.string() +
                                 "' --out '" + (dir.path() / "a").string() + "'",
                             dir.path() / "log1");
  EXPECT_EQ(r.status, 0) << r.output;
  return checkpoint;
}

// A checkpoint studied at another --seq-len than it was trained at: a study all the same (no
// parameter depends on the length), with a warning naming both lengths.
TEST(AttentionStudy, WarnsWhenACheckpointIsStudiedAtAnotherSequenceLength) {
  TempDir dir;
  const fs::path checkpoint = one_step_checkpoint(dir);
  std::string longer_flags = kSizeFlags;
  longer_flags.replace(longer_flags.find("--seq-len 5"), 11, "--seq-len 7");
  const Result longer = run_study(longer_flags + " --sequences 1 --checkpoint '" + checkpoint.string() + "' --out '" +
                                      (dir.path() / "b").string() + "'",
                                  dir.path() / "log2");
  EXPECT_EQ(longer.status, 0) << longer.output;
  for (const char* fragment : {"attention_study: warning:", "sequences of 5 tokens", "--seq-len is 7"})
    EXPECT_NE(longer.output.find(fragment), std::string::npos) << longer.output;
  EXPECT_TRUE(fs::exists(dir.path() / "b" / "index.html"));
}

TEST(AttentionStudy, RejectsACheckpointOfAnotherSizeAndBadFlags) {
  TempDir dir;
  const fs::path checkpoint = one_step_checkpoint(dir);
  const Result other = run_study(" --layers 1 --heads 2 --d-model 8 --d-ff 16 --seq-len 5 --checkpoint '" +
                                     checkpoint.string() + "' --out '" + (dir.path() / "b").string() + "'",
                                 dir.path() / "log2");
  EXPECT_EQ(other.status, 1);
  EXPECT_NE(other.output.find("attention_study:"), std::string::npos) << other.output;
  EXPECT_FALSE(fs::exists(dir.path() / "b" / "index.html"));
  const Result indivisible = run_study(" --d-model 10 --heads 4", dir.path() / "log3");
  EXPECT_EQ(indivisible.status, 2);
  EXPECT_NE(indivisible.output.find("divisible"), std::string::npos) << indivisible.output;
}

// Snapshots are on by default, and the help says so.
TEST(AttentionStudy, HelpShowsThatSnapshotsAreOnByDefault) {
  TempDir dir;
  const Result r = run_study(" --help", dir.path() / "log");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("--snapshots (the default)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("{false}"), std::string::npos) << r.output;
}

TEST(AttentionStudy, RefusesAnUnwritableOutBeforeTraining) {
  TempDir dir;
  // 100000 steps would take minutes: an immediate exit shows nothing trained first.
  const Result r = run_study(kSizeFlags + " --steps 100000 --out /proc/no/out", dir.path() / "log");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--out '/proc/no/out'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Training"), std::string::npos) << r.output;
}

}  // namespace
