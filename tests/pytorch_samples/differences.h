#pragma once
// differences.txt: the samples tapegrad is allowed not to match, each with its reason.
//
//   [deliberate]                             tapegrad chooses otherwise on purpose
//   *alpha=* | why ...
//   [not yet supported]                      features under way; delete lines as they land
//   maximum#* | maximum
//   [not supported, no plan]                 arguments tapegrad lacks, with no plan to add them
//   [bug]                                    tapegrad is wrong; fix it and delete the line
//
// A line is `pattern | reason`: the pattern matches whole sample ids, `*` standing for any run
// of characters (nothing else is special, so ids' brackets need no escaping). '#' starts a
// comment line.
#include <string>
#include <vector>

namespace tapegrad::pytorch_samples {

// The sections, in the order the test's table shows them.
inline constexpr const char* difference_sections[] = {"deliberate", "not yet supported",
                                                     "not supported, no plan", "bug"};

struct Difference {
  std::string pattern;
  std::string reason;
  std::string section;  // one of difference_sections
  int line = 0;
};

// std::runtime_error naming the file and line for a line without a reason, a pattern before any
// section, or an unknown section.
std::vector<Difference> load_differences(const std::string& path);

// Whether pattern (with `*` wildcards) matches all of text.
bool matches(const std::string& pattern, const std::string& text);

}  // namespace tapegrad::pytorch_samples
