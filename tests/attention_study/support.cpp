#include "tests/attention_study/support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace tapegrad::attention_study_test {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::vector<std::string>> csv_cells(const std::string& csv) {
  std::istringstream lines(csv);
  std::vector<std::vector<std::string>> out;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    out.emplace_back();
    for (std::string cell; std::getline(fields, cell, ',');) out.back().push_back(cell);
  }
  return out;
}

Result run(const std::string& command, const fs::path& log) {
  const int raw = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_text(log)};
}

std::string find_chromium() {
  if (const char* env = std::getenv("CHROMIUM"); env != nullptr && *env != '\0') return fs::exists(env) ? env : "";
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(candidate)) return candidate;
  return "";
}

std::string chromium_command(const std::string& chromium, const fs::path& profile) {
  return "timeout 60 '" + chromium +
         "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
         " --disable-component-update --disable-sync --disable-dev-shm-usage --hide-scrollbars --user-data-dir='" +
         profile.string() + "'";
}

std::string file_url(const fs::path& page, const std::string& fragment) {
  std::string url = "file://" + fs::absolute(page).string();
  if (fragment.empty()) return url;
  url += '#';
  for (const char c : fragment) url += c == ' ' ? std::string("%20") : std::string(1, c);
  return url;
}

std::array<int, 3> Pixels::at(int x, int y) const {
  const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
  return {rgb[i], rgb[i + 1], rgb[i + 2]};
}

Pixels decode_png(const fs::path& path) {
  Pixels p;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &p.width, &p.height, &channels, 3);
  if (data == nullptr) return p;
  p.rgb.assign(data, data + static_cast<std::size_t>(p.width) * p.height * 3);
  stbi_image_free(data);
  return p;
}

std::size_t distinct_colours(const Pixels& p, int x0, int y0, int x1, int y1) {
  std::set<int> colours;
  for (int y = y0; y < std::min(y1, p.height); y += 2) {
    for (int x = x0; x < std::min(x1, p.width); x += 2) {
      const auto c = p.at(x, y);
      colours.insert((c[0] << 16) | (c[1] << 8) | c[2]);
    }
  }
  return colours.size();
}

}  // namespace tapegrad::attention_study_test
