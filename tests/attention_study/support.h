#pragma once
// What the attention-study tests share: temporary directories (tests/support/temp_dir.h), running a command, headless
// Chromium, and PNG decoding (stb_image) of its screenshots.
#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace tapegrad::attention_study_test {

std::string read_text(const std::filesystem::path& path);
// The cells of each line of a CSV table whose cells hold no comma or quote, the header first.
std::vector<std::vector<std::string>> csv_cells(const std::string& csv);

using testing_support::TempDir;

struct Result {
  int status;
  std::string output;  // stdout and stderr
};

// Runs a shell command, its output into log.
Result run(const std::string& command, const std::filesystem::path& log);

// $CHROMIUM when set (a path that does not exist counts as not installed), else Debian's paths;
// "" when there is none.
std::string find_chromium();

// Headless Chromium as root in CI: no sandbox, its own profile, time-boxed; the caller appends
// --dump-dom or --screenshot and the URL.
std::string chromium_command(const std::string& chromium, const std::filesystem::path& profile);

// "file:///abs/path#fragment", the fragment percent-encoded where a shell or URL would mind.
std::string file_url(const std::filesystem::path& page, const std::string& fragment = "");

struct Pixels {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;
  std::array<int, 3> at(int x, int y) const;
};
// width 0 when the file cannot be decoded.
Pixels decode_png(const std::filesystem::path& path);

// The number of distinct colours in the rectangle [x0, x1) x [y0, y1), every second pixel.
std::size_t distinct_colours(const Pixels& p, int x0, int y0, int x1, int y1);

}  // namespace tapegrad::attention_study_test
