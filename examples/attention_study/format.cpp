#include "examples/attention_study/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tapegrad::attention_study {

std::string short_number(double v) {
  if (v == 0.0) return "0";
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 0.001 && a < 10000.0) {
    // Decimals for 3 significant digits: 2 for [1, 10), 1 for [10, 100), 3 for [0.1, 1), ...
    const int decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(a))));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2e", v);
  }
  return buf;
}

}  // namespace tapegrad::attention_study
