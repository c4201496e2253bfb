#include "examples/attention_study/ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "examples/attention_study/format.h"

namespace tapegrad::attention_study {

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!(hi > lo)) {
    const double pad = lo == 0.0 ? 1.0 : std::fabs(lo) * 0.5;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / max_ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10.0 * power;
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  }
  const double first = std::floor(lo / step), last = std::ceil(hi / step);
  std::vector<double> ticks;
  // Multiplying an integer count by step (rather than adding step repeatedly) keeps 0.3 from
  // becoming 0.30000000000000004 and later ticks from drifting.
  for (double k = first; k <= last; k += 1.0) ticks.push_back(k * step);
  return ticks;
}

std::vector<std::string> tick_labels(const std::vector<double>& ticks) {
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;
  double largest = 0.0;
  for (const double t : ticks) largest = std::max(largest, std::fabs(t));
  const bool fixed = step >= 1e-3 && largest < 1e5;
  // A 1-2-5 step of 10^e needs max(0, -e) decimals; the epsilon absorbs the step's rounding.
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  std::vector<std::string> labels;
  for (const double t : ticks) {
    char buf[32];
    if (fixed) {
      std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(t) < step * 1e-9 ? 0.0 : t);
      labels.emplace_back(buf);
    } else {
      labels.push_back(short_number(t));
    }
  }
  return labels;
}

}  // namespace tapegrad::attention_study
