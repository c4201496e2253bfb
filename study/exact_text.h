#pragma once
// A double as text that reads back as the same double (17 significant digits): what the study's
// files write, so that a number read back from them equals the one computed.
#include <cstdio>
#include <string>

namespace tapegrad::study {

inline std::string exact_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

}  // namespace tapegrad::study
