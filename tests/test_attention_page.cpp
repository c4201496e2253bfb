// The attention-study page in a real browser: a page written from an in-process capture of a
// small untrained copy-task Transformer (so the test knows every captured value) and from
// snapshots made from it, loaded by headless Chromium from a file. The page's self-test fragment
// (#selftest=..., page.js) clicks a head and moves the mouse over a cell with real DOM events; the
// test reads the readout back and compares it with the capture. Screenshots of the overview at
// seq 10 and seq 64 must be colourful (set ATTENTION_STUDY_SCREENSHOTS=dir to keep them). Each
// browser run costs about 3 s, so there are four.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "autograd/base/errors.h"
#include "examples/attention_study/circuit.h"
#include "examples/attention_study/report.h"
#include "examples/attention_study/report_data.h"
#include "examples/attention_study/tables.h"
#include "nn/copy_task/copy_task.h"
#include "tests/attention_study/support.h"

namespace {

namespace fs = std::filesystem;
using namespace tapegrad;
using namespace tapegrad::attention_study_test;
using attention_study::StudyResult;

// Snapshot k of n: A moved from uniform over the may-attend keys towards the captured A, dL/dA,
// S and dL/dS scaled likewise, so every snapshot differs from the capture and from the others.
std::vector<study::AttentionSnapshot> make_snapshots(const StudyResult& study, std::size_t n) {
  std::vector<study::AttentionSnapshot> out;
  for (std::size_t k = 0; k < n; ++k) {
    const float t = float(k + 1) / float(n + 1);
    study::AttentionSnapshot s{.step = 10 * k, .loss = 2.0 / double(k + 1), .names = {}, .weights = {},
                               .weights_grad = {}, .scores = {}, .scores_grad = {}};
    for (const auto& maps : study.maps) {
      const xt::xarray<float> mask = xt::cast<float>(maps.may_attend.may_attend());  // [b, q, k]
      const xt::xarray<float> count = xt::sum(mask, {2}, xt::keep_dims);
      const xt::xarray<float> uniform = xt::expand_dims(mask / count, 1);  // [b, 1, q, k]
      s.names.push_back(maps.module);
      s.weights.push_back(t * maps.weights + (1 - t) * uniform);
      s.weights_grad.push_back(t * maps.grad);
      s.scores.push_back(t * maps.scores);
      s.scores_grad.push_back(t * maps.scores_grad);
    }
    out.push_back(std::move(s));
  }
  return out;
}

struct StudyPage {
  StudyResult study;
  std::vector<study::AttentionSnapshot> snapshots;
  std::optional<attention_study::CircuitStudy> circuit;
  fs::path html;
};

// The page of an untrained model (`layers` layers, 2 heads, `sequences` sequences of seq_len) with
// `snapshots` snapshots, and with `circuit` its circuit study, written once per process.
StudyPage make_page(const TempDir& dir, std::size_t layers, std::size_t sequences, std::size_t seq_len,
                    std::size_t snapshots, bool circuit = false) {
  copy_task::Config config;
  config.layers = layers;
  config.heads = 2;
  config.d_model = 8;
  config.d_ff = 16;
  config.seq_len = seq_len;
  config.seed = 5;
  copy_task::Trainer trainer(config);
  Generator gen(config.seed);
  StudyPage page;
  const IndexArray data = copy_task::random_sequences(sequences, seq_len, config.vocab, gen);
  page.study = attention_study::study_batch(trainer.model(), data);
  if (circuit) page.circuit = attention_study::circuit_study(trainer.model(), data, config.vocab, 6, page.study);
  // As after training, when the model gets one sequence wrong and the others right: the last
  // sequence's gradients are 1000 times the others', so a colour scale shared by the batch must
  // still show the quiet sequence 0 (the page opens on it).
  if (sequences > 1)
    for (auto& maps : page.study.maps)
      for (auto* gradient : {&maps.grad, &maps.scores_grad}) xt::view(*gradient, sequences - 1) *= 1000.0f;
  page.snapshots = make_snapshots(page.study, snapshots);
  attention_study::RunInfo run{.config = config, .source = "made by the test", .batch_source = "random",
                               .losses = {}, .steps = 0, .accuracy = 0, .accuracy_sequences = 0};
  for (int s = 0; s < 200; ++s) run.losses.push_back(2.5 * std::exp(-s / 40.0) + 0.001);
  const fs::path out = dir.path() / ("seq" + std::to_string(seq_len));
  attention_study::write_report(out, run, page.study, page.snapshots, page.circuit ? &*page.circuit : nullptr);
  page.html = out / "index.html";
  return page;
}

const StudyPage& seq10_page() {
  static TempDir dir;
  static const StudyPage page = make_page(dir, 2, 2, 10, 3, /*circuit=*/true);
  return page;
}

const StudyPage& seq64_page() {
  static TempDir dir;
  // One layer and one sequence: the page's size grows with seq^2, and CI runs this twice.
  static const StudyPage page = make_page(dir, 1, 1, 64, 1);
  return page;
}

std::size_t call_index(const StudyResult& study, const std::string& short_name) {
  for (std::size_t i = 0; i < study.maps.size(); ++i)
    if (study.maps[i].short_name == short_name) return i;
  throw std::runtime_error("no call " + short_name);
}

#define REQUIRE_CHROMIUM(chromium)                                            \
  const std::string chromium = find_chromium();                               \
  if (chromium.empty()) {                                                     \
    std::printf("SKIPPED: chromium not installed\n");                         \
    GTEST_SKIP() << "SKIPPED: chromium not installed (the page did not run)"; \
  }

// The DOM after the page ran #selftest=<fragment>.
std::string dump_dom(const std::string& chromium, const fs::path& page, const std::string& fragment) {
  TempDir profile;
  const Result r = run(chromium_command(chromium, profile.path() / "p") + " --dump-dom '" + file_url(page, fragment) + "'",
                       profile.path() / "dom.html");
  EXPECT_EQ(r.status, 0) << r.output.substr(0, 2000);
  return r.output;
}

// The lines of <pre id="selftest-result"> in a dumped DOM, one per probe.
std::vector<std::string> selftest_results(const std::string& dom) {
  const std::string open = "<pre id=\"selftest-result\">";
  const auto from = dom.find(open);
  if (from == std::string::npos) return {};
  std::istringstream text(dom.substr(from + open.size(), dom.find("</pre>", from) - from - open.size()));
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

// The value at the end of a readout ("... = 0.123"), as the page printed it: JavaScript's
// shortest round-trip form of the float32 widened to double, so it parses back to it exactly.
double readout_value(const std::string& readout) {
  const auto at = readout.rfind("= ");
  if (at == std::string::npos) throw std::runtime_error("no value in the readout '" + readout + "'");
  return std::stod(readout.substr(at + 2));
}

// A screenshot of the top of the page, the overview: two grids of thumbnails, for the test's two
// heads those of A in 100 <= x < 256 and those of dL/dS in 372 <= x < 528 (no text there). Each
// must be drawn, in many colours.
void expect_colourful_overview(const std::string& chromium, const fs::path& page, const std::string& name) {
  const fs::path dir = page.parent_path(), shot = dir / (name + ".png");
  const Result r = run(chromium_command(chromium, dir / "profile") + " --window-size=1100,1000 --screenshot='" +
                           shot.string() + "' '" + file_url(page) + "'",
                       dir / "screenshot.log");
  EXPECT_EQ(r.status, 0) << r.output;
  if (const char* keep = std::getenv("ATTENTION_STUDY_SCREENSHOTS"); keep != nullptr && *keep != '\0')
    fs::copy_file(shot, fs::path(keep) / shot.filename(), fs::copy_options::overwrite_existing);
  const Pixels p = decode_png(shot);
  ASSERT_EQ(p.width, 1100);
  ASSERT_EQ(p.height, 1000);
  EXPECT_GT(distinct_colours(p, 100, 640, 256, 1000), 100u) << "the overview of A is (nearly) blank";
  EXPECT_GT(distinct_colours(p, 372, 640, 528, 1000), 50u) << "the overview of dL/dS is (nearly) blank";
}

// Four probes in one browser run (each run costs seconds): dL/dS of a head of the capture; A of
// another head at the first snapshot, chosen with the slider; dL/dS there, which the page does not
// hold for a snapshot and must not take from the end of training; the readout after choosing
// another sequence (cleared: the value read was sequence 0's); a cell of the circuit table, with
// its heatmap colour; the points of a method's scatter against exact patching; the circuit graph's
// edges and the readout of its largest; the cell sweep coloured by AtP, hovered at its largest cell,
// whose readout gives the cell's exact and AtP shares of cells.csv. Then the overview's screenshot.
TEST(AttentionPage, Seq10HoverReadsTheCapturedValueAndTheSlidersSnapshot) {
  REQUIRE_CHROMIUM(chromium);
  const StudyPage& page = seq10_page();
  // The circuit graph draws the edges whose exact share is at least 0.02, the 40 largest at most.
  const attention_study::EdgeCircuit& edges = page.circuit->edges;
  const double gap = page.circuit->clean_metric - page.circuit->corrupted_metric;
  std::size_t largest = 0, drawn = 0;
  for (std::size_t i = 0; i < edges.exact.rows.size(); ++i) {
    const double share = edges.exact.rows[i].effect / gap;
    drawn += std::abs(share) >= 0.02;
    if (std::abs(share) > std::abs(edges.exact.rows[largest].effect / gap)) largest = i;
  }
  const std::string largest_edge = edges.sender_names[largest] + "|" + edges.receiver_names[largest];
  // The cell of cells.csv largest in |exact share| (the page's cell sweep is its float32 copy).
  const std::vector<std::vector<std::string>> cells = csv_cells(read_text(page.html.parent_path() / "cells.csv"));
  ASSERT_GT(cells.size(), 2u);
  const auto largest_cell = std::max_element(cells.begin() + 1, cells.end(), [](const auto& a, const auto& b) {
    return std::abs(std::stod(a[4])) < std::abs(std::stod(b[4]));
  });
  const auto& cell = *largest_cell;
  const std::string cell_head = cell[0] + " h" + cell[1];
  const std::string dom = dump_dom(
      chromium, page.html, "selftest=dec0 cross h1,2,3,dS;enc1 self h0,4,1,A,0;enc1 self h0,4,1,dS,0;sequence=1;"
      "cell=circuit,dec1 cross h1 z,exact;scatter=AtP + QK fix;edges;edge=" + largest_edge + ";cells=" + cell_head +
      "," + cell[2] + "," + cell[3] + ",AtP");
  EXPECT_NE(dom.find("id=\"snapshot-slider\""), std::string::npos);
  const std::vector<std::string> readouts = selftest_results(dom);
  ASSERT_EQ(readouts.size(), 9u) << dom.substr(0, 3000);
  EXPECT_EQ(readouts[2].rfind("unavailable: dL/dS at step 0 is not in the page", 0), 0u) << readouts[2];
  EXPECT_EQ(readouts[3], "Click a thumbnail; move the mouse over a map to read its values. ");

  const auto& cross = page.study.maps.at(call_index(page.study, "dec0 cross"));
  // Query 2 is the decoder's input token 2, key 3 the source's token 3, of sequence 0.
  const std::string where = "query 2 (token " + attention_study::token_label(cross.query_tokens(0, 2)) +
                            "), key 3 (token " + attention_study::token_label(cross.key_tokens(0, 3)) + ")";
  EXPECT_NE(readouts[0].find("dec0 cross h1 dL/dS, sequence 0: " + where), std::string::npos) << readouts[0];
  const double gradient = cross.scores_grad(0, 1, 2, 3);
  ASSERT_NE(gradient, 0.0);
  EXPECT_EQ(readout_value(readouts[0]), gradient) << readouts[0];

  const std::size_t call = call_index(page.study, "enc1 self");
  const double weight = page.snapshots.at(0).weights.at(call)(0, 0, 4, 1);
  ASSERT_NE(weight, double(page.study.maps[call].weights(0, 0, 4, 1)));  // the snapshot is not the capture
  EXPECT_EQ(readout_value(readouts[1]), weight) << readouts[1];

  // The exact share of dec1 cross h1's z, as the table shows numbers (6 significant digits), on a
  // coloured cell.
  const attention_study::CircuitStudy& circuit = *page.circuit;
  std::size_t row = 0;
  while (circuit.row_names.at(row) != "dec1 cross h1 z") ++row;
  const auto& exact = circuit.comparison.exact;
  const double share = circuit.recovered(exact.rows[row].metric - exact.target_metric);
  ASSERT_NE(share, 0.0);
  const std::string shown = attention_study::shown_cells({share}).at(0);
  EXPECT_EQ(readouts[4].rfind(shown + " rgb(", 0), 0u) << readouts[4] << " against " << shown;
  // A point per row of the circuit table in each method's scatter against exact patching.
  EXPECT_EQ(readouts[5], "points " + std::to_string(exact.rows.size()));
  ASSERT_GT(drawn, 0u) << "no edge carries 2% of the gap";
  EXPECT_EQ(readouts[6], "edges " + std::to_string(std::min<std::size_t>(drawn, 40)));
  // "<sender> → <receiver>: exact <3 significant digits>, EAP ..., EAP-IG ..."
  const std::string head = edges.sender_names[largest] + " \u2192 " + edges.receiver_names[largest] + ": exact ";
  ASSERT_EQ(readouts[7].rfind(head, 0), 0u) << readouts[7];
  const double read = std::stod(readouts[7].substr(head.size()));
  const double largest_share = edges.exact.rows[largest].effect / gap;
  EXPECT_NEAR(read, largest_share, 5e-3 * std::abs(largest_share)) << readouts[7];
  // "<head> cell, query <q>, key <k> (AtP shown) = exact <share>, AtP <share>", each share the
  // float32 the page holds, printed to its last bit.
  const std::string cell_readout = cell_head + " cell, query " + cell[2] + ", key " + cell[3] + " (AtP shown) = exact ";
  ASSERT_EQ(readouts[8].rfind(cell_readout, 0), 0u) << readouts[8];
  const std::string shares = readouts[8].substr(cell_readout.size());
  const auto atp_at = shares.find(", AtP ");
  ASSERT_NE(atp_at, std::string::npos) << readouts[8];
  ASSERT_NE(std::stod(cell[4]), 0.0);
  EXPECT_EQ(std::stod(shares.substr(0, atp_at)), double(float(std::stod(cell[4])))) << readouts[8];
  EXPECT_EQ(std::stod(shares.substr(atp_at + 6)), double(float(std::stod(cell[5])))) << readouts[8];
  expect_colourful_overview(chromium, page.html, "overview_seq10");
}

// Seq 64: the detail maps' cells are 4 px; the hover still finds a far cell of the causal decoder
// self-attention (whose mask xtensor once got wrong from seq 17 on), and its mirror image, a
// masked cell (the page's mask is packed 8 cells a byte). Then the overview's screenshot.
TEST(AttentionPage, Seq64HoverReadsAFarCellAndHasNoSliderForOneSnapshot) {
  REQUIRE_CHROMIUM(chromium);
  const StudyPage& page = seq64_page();
  const std::string dom = dump_dom(chromium, page.html, "selftest=dec0 self h1,50,40,A;dec0 self h1,40,50,A");
  EXPECT_EQ(dom.find("id=\"snapshot-slider\""), std::string::npos);
  const std::vector<std::string> readouts = selftest_results(dom);
  ASSERT_EQ(readouts.size(), 2u) << dom.substr(0, 3000);
  const auto& maps = page.study.maps.at(call_index(page.study, "dec0 self"));
  ASSERT_TRUE(maps.may_attend.may_attend()(0, 50, 40));
  EXPECT_NE(readouts[0].find("query 50 "), std::string::npos) << readouts[0];
  EXPECT_EQ(readout_value(readouts[0]), double(maps.weights(0, 1, 50, 40))) << readouts[0];
  ASSERT_FALSE(maps.may_attend.may_attend()(0, 40, 50));
  EXPECT_TRUE(readouts[1].ends_with("= masked")) << readouts[1];
  expect_colourful_overview(chromium, page.html, "overview_seq64");
}

// Column `column` of every data row of a CSV table whose cells hold no comma, parsed as doubles.
std::vector<double> csv_column_values(const std::string& csv, std::size_t column) {
  std::istringstream lines(csv);
  std::vector<double> out;
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    std::istringstream cells(line);
    std::string cell;
    for (std::size_t c = 0; c <= column; ++c) std::getline(cells, cell, ',');
    out.push_back(std::stod(cell));
  }
  return out;
}

// The CSV tables read back as the numbers computed, to the last bit.
TEST(AttentionTables, CsvNumbersReadBackExactly) {
  const StudyResult& study = seq10_page().study;
  const std::string ablation = attention_study::to_csv(attention_study::head_ablation_table(study));
  const std::vector<double> losses = csv_column_values(ablation, 2), changes = csv_column_values(ablation, 3);
  ASSERT_EQ(losses.size(), study.ablation.rows.size());
  for (std::size_t i = 0; i < losses.size(); ++i) {
    EXPECT_EQ(losses[i], study.ablation.rows[i].loss) << i;
    EXPECT_EQ(changes[i], study.ablation.rows[i].change) << i;
  }
  const std::vector<double> norms = csv_column_values(attention_study::to_csv(attention_study::head_norms_table(study)), 3);
  ASSERT_EQ(norms.size(), study.heads.size());
  for (std::size_t i = 0; i < norms.size(); ++i) EXPECT_EQ(norms[i], study.heads[i].scores_grad) << i;
}

// The page holds A and dL/dA of each snapshot, not their S and dL/dS: those would double its size.
TEST(AttentionPage, PageDataHoldsOnlyAAndItsGradientOfEachSnapshot) {
  const std::string html = read_text(seq10_page().html);
  const auto from = html.find("\"snapshots\":"), to = html.find("\"attributions\":");
  ASSERT_LT(from, to);
  const std::string snapshots = html.substr(from, to - from);
  EXPECT_NE(snapshots.find("\"A\":"), std::string::npos);
  EXPECT_NE(snapshots.find("\"dA\":"), std::string::npos);
  EXPECT_EQ(snapshots.find("\"S\":"), std::string::npos);
  EXPECT_EQ(snapshots.find("\"dS\":"), std::string::npos);
}

TEST(AttentionPage, RejectsSnapshotsThatDoNotFitTheStudy) {
  const StudyPage& page = seq10_page();
  attention_study::RunInfo run;
  TempDir dir;
  std::vector<study::AttentionSnapshot> missing = page.snapshots;
  missing[1].names[2] = "no.such.module";
  EXPECT_THROW(
      {
        try {
          attention_study::write_report(dir.path(), run, page.study, missing);
        } catch (const ValueError& e) {
          EXPECT_NE(std::string(e.what()).find("step 10 has no attention call 'decoder.decoder_layers.0.self_attention'"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      ValueError);
  std::vector<study::AttentionSnapshot> other_shape = page.snapshots;
  other_shape[0].weights[0] = xt::zeros<float>({1, 2, 10, 10});
  EXPECT_THROW(attention_study::write_report(dir.path(), run, page.study, other_shape), ShapeError);
  EXPECT_FALSE(fs::exists(dir.path() / "index.html"));  // nothing written
}

}  // namespace
