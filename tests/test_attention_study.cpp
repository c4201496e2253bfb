// End-to-end test of examples/attention_study: runs the program on a tiny configuration and
// checks what it wrote without using its drawing code: the PNGs are decoded with stb_image, the
// page is read as text and rendered by headless Chromium.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;

// The tiny model: 2 layers so that "per layer" is exercised, 2 heads, 2 studied sequences of 5.
constexpr int kLayers = 2, kHeads = 2, kSequences = 2, kSeqLen = 5, kCell = 24;
const std::string kSizeFlags =
    " --layers 2 --heads 2 --d-model 8 --d-ff 16 --seq-len 5 --batch 8 --warmup 20 --seed 3"
    " --threads 1";
const std::string kStudyFlags = " --sequences 2 --cell 24";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

using tapegrad::testing_support::TempDir;

struct Result {
  int status;
  std::string output;  // stdout and stderr
};

Result run(const std::string& command, const fs::path& log) {
  const int raw = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_text(log)};
}

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

std::vector<std::string> expected_maps() {
  std::vector<std::string> files;
  for (int layer = 0; layer < kLayers; ++layer)
    for (const std::string& module : {"enc" + std::to_string(layer) + "_self", "dec" + std::to_string(layer) + "_self",
                                      "dec" + std::to_string(layer) + "_cross"})
      for (int h = 0; h < kHeads; ++h)
        for (int b = 0; b < kSequences; ++b)
          for (const char* kind : {"weights", "grad"})
            files.push_back("maps/" + module + "_h" + std::to_string(h) + "_s" + std::to_string(b) + "_" + kind +
                            ".png");
  return files;
}

const std::vector<std::string> kCharts = {"loss.png", "grad_norms_heads.png", "grad_norms_sublayers.png"};

struct PngHeader {
  bool valid = false;
  std::uint32_t width = 0, height = 0;
  int bit_depth = 0, colour_type = 0;
};

// The signature and the IHDR chunk, read by hand (independent of any decoder).
PngHeader read_png_header(const fs::path& path) {
  const std::string bytes = read_text(path);
  PngHeader h;
  static const std::string signature = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 33 || bytes.compare(0, 8, signature) != 0 || bytes.compare(12, 4, "IHDR") != 0) return h;
  const auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  h.valid = be32(8) == 13;
  h.width = be32(16);
  h.height = be32(20);
  h.bit_depth = static_cast<unsigned char>(bytes[24]);
  h.colour_type = static_cast<unsigned char>(bytes[25]);
  return h;
}

struct Pixels {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;
  std::array<int, 3> at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

Pixels decode(const fs::path& path) {
  Pixels p;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &p.width, &p.height, &channels, 3);
  if (data == nullptr) return p;
  p.rgb.assign(data, data + static_cast<std::size_t>(p.width) * p.height * 3);
  stbi_image_free(data);
  return p;
}

// Colourfulness: max - min channel (0 for white, black and greys).
int chroma(const std::array<int, 3>& c) { return std::max({c[0], c[1], c[2]}) - std::min({c[0], c[1], c[2]}); }

// maps.csv rows by file name: the columns named in its header.
std::map<std::string, std::map<std::string, std::string>> read_manifest(const fs::path& path) {
  std::istringstream in(read_text(path));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::istringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  std::map<std::string, std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::istringstream cells(line);
    for (std::size_t i = 0; i < header.size() && std::getline(cells, line, ','); ++i) row[header[i]] = line;
    rows[row["file"]] = row;
  }
  return rows;
}

std::set<std::string> image_sources(const std::string& html) {
  static const std::regex img(R"re(<img src="([^"]*)")re");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), img); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1]);
  return out;
}

TEST(AttentionStudy, WritesEveryPictureAsAValidPng) {
  const fs::path& out = trained_output();
  std::vector<std::string> files = expected_maps();
  files.insert(files.end(), kCharts.begin(), kCharts.end());
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    ASSERT_TRUE(fs::exists(out / f));
    const PngHeader h = read_png_header(out / f);
    EXPECT_TRUE(h.valid);
    EXPECT_EQ(h.bit_depth, 8);
    EXPECT_EQ(h.colour_type, 2);  // RGB
    // Readable: a map of 5 tokens at 24 px a cell is over 120 px; nothing is absurdly large.
    EXPECT_GE(h.width, 150u);
    EXPECT_GE(h.height, 150u);
    EXPECT_LE(h.width, 3000u);
    EXPECT_LE(h.height, 3000u);
    const Pixels p = decode(out / f);
    EXPECT_EQ(p.width, static_cast<int>(h.width));
    EXPECT_EQ(p.height, static_cast<int>(h.height));
  }
  for (const auto& entry : fs::recursive_directory_iterator(out)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << entry.path();
  }
}

// The exports (export.h) and the training snapshots at 0, 1, 2, 4, ..., 40, next to the page.
TEST(AttentionStudy, WritesExportsAndTrainingSnapshots) {
  const fs::path& out = trained_output();
  for (const char* f : {"attention.safetensors", "bertviz.json", "snapshots.safetensors",
                        "npy/encoder.encoder_layers.0.multi_head_attention.weights.npy", "npy/encoder.rollout.npy"}) {
    EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
  }
  EXPECT_NE(read_text(out / "snapshots.safetensors").find(R"("steps":"0,1,2,4,8,16,32,40")"), std::string::npos);
}

TEST(AttentionStudy, MapsColourEveryCellAndGradientsAreNotBlank) {
  const fs::path& out = trained_output();
  const auto manifest = read_manifest(out / "maps.csv");
  ASSERT_EQ(manifest.size(), expected_maps().size());
  for (const auto& f : expected_maps()) {
    SCOPED_TRACE(f);
    ASSERT_EQ(manifest.count(f), 1u);
    const auto& row = manifest.at(f);
    const int rows = std::stoi(row.at("rows")), cols = std::stoi(row.at("cols"));
    const int x0 = std::stoi(row.at("grid_x")), y0 = std::stoi(row.at("grid_y")), cell = std::stoi(row.at("cell"));
    EXPECT_EQ(cell, kCell);
    // Queries: the source (seq tokens) in the encoder, the decoder's input (seq - 1) in the
    // decoder; keys: the source, except in the decoder's self-attention.
    const bool encoder = f.find("/enc") != std::string::npos, cross = f.find("_cross_") != std::string::npos;
    EXPECT_EQ(rows, encoder ? kSeqLen : kSeqLen - 1);
    EXPECT_EQ(cols, encoder || cross ? kSeqLen : kSeqLen - 1);
    const Pixels p = decode(out / f);
    ASSERT_GE(p.width, x0 + cols * cell);
    ASSERT_GE(p.height, y0 + rows * cell);
    int strongest = 0, coloured = 0;
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) {
        const int c = chroma(p.at(x0 + j * cell + cell / 2 + 3, y0 + i * cell + cell / 2 - 3));
        strongest = std::max(strongest, c);
        coloured += c > 20;
      }
    }
    if (row.at("kind") == "grad") {
      // The symmetric scale ends at the largest |dL/dA|: a non-zero gradient paints at least one
      // cell full blue or full red, a zero one leaves every cell white.
      EXPECT_GT(std::stod(row.at("hi")), 0.0);
      EXPECT_GT(strongest, 100) << "every cell is (nearly) white";
    } else {
      // viridis has no grey: every may-attend cell is coloured (masked ones are grey).
      const int may_attend = !encoder && !cross ? rows * (rows + 1) / 2 : rows * cols;  // causal
      EXPECT_EQ(coloured, may_attend);
    }
  }
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
  EXPECT_EQ(line, "module,head,loss ablated,change");
  rows = 0;
  while (std::getline(ablation, line)) ++rows;
  EXPECT_EQ(rows, kLayers * 3 * kHeads);
}

TEST(AttentionStudy, PageShowsEveryPictureThroughRelativeLinks) {
  const fs::path& out = trained_output();
  const std::string html = read_text(out / "index.html");
  std::set<std::string> expected(kCharts.begin(), kCharts.end());
  for (const auto& f : expected_maps()) expected.insert(f);
  EXPECT_EQ(image_sources(html), expected);
  EXPECT_EQ(html.find("file:"), std::string::npos);
  EXPECT_EQ(html.find("src=\"/"), std::string::npos);
  EXPECT_EQ(html.find("href=\"/"), std::string::npos);
  EXPECT_NE(html.find("decoder layer 1: source-target attention"), std::string::npos);
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
  EXPECT_FALSE(fs::exists(dir.path() / "loaded" / "loss.png"));
  const std::string html = read_text(dir.path() / "loaded" / "index.html");
  EXPECT_NE(html.find("no loss history"), std::string::npos);
  EXPECT_EQ(image_sources(html).count("loss.png"), 0u);
  // The same parameters on the same sequences draw the same maps, bit for bit.
  for (const auto& f : expected_maps()) {
    SCOPED_TRACE(f);
    EXPECT_EQ(read_text(dir.path() / "loaded" / f), read_text(dir.path() / "trained" / f));
  }
}

TEST(AttentionStudy, RejectsACheckpointOfAnotherSizeAndBadFlags) {
  TempDir dir;
  const fs::path checkpoint = dir.path() / "model.safetensors";
  ASSERT_EQ(run_study(kSizeFlags + " --steps 1 --sequences 1 --save-checkpoint '" + checkpoint.string() + "' --out '" +
                          (dir.path() / "a").string() + "'",
                      dir.path() / "log1")
                .status,
            0);
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

// ---- the page in a browser --------------------------------------------------------------------

// $CHROMIUM when set (a path that does not exist counts as not installed), else Debian's paths.
std::string find_chromium() {
  if (const char* env = std::getenv("CHROMIUM"); env != nullptr && *env != '\0') return fs::exists(env) ? env : "";
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(candidate)) return candidate;
  return "";
}

std::string chromium_command(const std::string& chromium, const fs::path& profile) {
  return "timeout 90 '" + chromium +
         "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
         " --disable-component-update --disable-sync --disable-dev-shm-usage --hide-scrollbars --user-data-dir='" +
         profile.string() + "'";
}

TEST(AttentionStudy, ChromiumLoadsEveryImageOfThePage) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    std::printf("SKIPPED: chromium not installed\n");
    GTEST_SKIP() << "SKIPPED: chromium not installed (the browser check of index.html did not run)";
  }
  const fs::path& out = trained_output();
  TempDir profile;
  // A copy of the page, next to it so its relative links resolve, with a script that reports
  // after the load event how many images loaded (complete, with a decoded width).
  std::string html = read_text(out / "index.html");
  const std::string probe =
      "<script>window.addEventListener('load', () => { const all = [...document.images];"
      " const ok = all.filter(i => i.complete && i.naturalWidth > 0);"
      " const m = document.createElement('pre'); m.id = 'image-check';"
      " m.textContent = 'IMAGES-LOADED ' + ok.length + '/' + all.length + ' BROKEN ' +"
      " all.filter(i => !ok.includes(i)).map(i => i.getAttribute('src')).join(' ');"
      " document.body.appendChild(m); });</script>\n";
  const auto body_end = html.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  html.insert(body_end, probe);
  const fs::path probe_page = out / "probe_index.html";
  std::ofstream(probe_page) << html;
  const Result dom =
      run(chromium_command(chromium, profile.path() / "dom") + " --virtual-time-budget=10000 --dump-dom 'file://" +
              fs::absolute(probe_page).string() + "'",
          profile.path() / "dom.html");
  fs::remove(probe_page);
  ASSERT_EQ(dom.status, 0) << dom.output;
  const std::size_t images = expected_maps().size() + kCharts.size();
  const std::string want = "IMAGES-LOADED " + std::to_string(images) + "/" + std::to_string(images) + " BROKEN";
  EXPECT_NE(dom.output.find(want), std::string::npos)
      << "want '" << want << "' in the dumped DOM:\n"
      << dom.output.substr(
             dom.output.rfind("IMAGES-LOADED") == std::string::npos ? 0 : dom.output.rfind("IMAGES-LOADED"), 2000);

  // A screenshot of the top of the page: the loss chart and the tables, not a blank page.
  const fs::path shot = profile.path() / "page.png";
  const Result screenshot =
      run(chromium_command(chromium, profile.path() / "shot") + " --window-size=1200,1500 --screenshot='" +
              shot.string() + "' 'file://" + fs::absolute(out / "index.html").string() + "'",
          profile.path() / "screenshot.log");
  ASSERT_EQ(screenshot.status, 0) << screenshot.output;
  const Pixels p = decode(shot);
  ASSERT_EQ(p.width, 1200) << screenshot.output;
  ASSERT_EQ(p.height, 1500);
  std::size_t ink = 0;
  std::set<int> colours;
  for (int y = 0; y < p.height; y += 2) {
    for (int x = 0; x < p.width; x += 2) {
      const auto c = p.at(x, y);
      ink += c[0] + c[1] + c[2] < 600;
      colours.insert((c[0] << 16) | (c[1] << 8) | c[2]);
    }
  }
  EXPECT_GT(ink, 2000u) << "the screenshot is (nearly) blank";
  EXPECT_GT(colours.size(), 20u) << "the screenshot has almost no colours";
}

}  // namespace
