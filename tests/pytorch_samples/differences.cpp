#include "differences.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tapegrad::pytorch_samples {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

std::vector<Difference> load_differences(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<Difference> out;
  std::string section, text;
  for (int line = 1; std::getline(in, text); ++line) {
    text = trim(text);
    const std::string where = path + ":" + std::to_string(line) + ": ";
    if (text.empty() || text[0] == '#') continue;
    if (text.front() == '[' && text.back() == ']') {
      section = text.substr(1, text.size() - 2);
      if (std::find(std::begin(difference_sections), std::end(difference_sections), section) ==
          std::end(difference_sections)) {
        throw std::runtime_error(where + "unknown section [" + section + "]");
      }
      continue;
    }
    const auto bar = text.find(" | ");
    if (bar == std::string::npos) throw std::runtime_error(where + "a line is 'pattern | reason'; this one has no ' | '");
    if (section.empty()) throw std::runtime_error(where + "a pattern before any [section]");
    out.push_back({trim(text.substr(0, bar)), trim(text.substr(bar + 3)), section, line});
  }
  return out;
}

bool matches(const std::string& pattern, const std::string& text) {
  // Greedy glob with backtracking to the last '*': linear for patterns with few stars.
  std::size_t p = 0, t = 0, star = std::string::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace tapegrad::pytorch_samples
