#pragma once
// Axis ticks at "nice" values: multiples of 1, 2 or 5 times a power of ten, covering [lo, hi]
// with at most max_ticks + 1 ticks (the first <= lo, the last >= hi). lo == hi widens the range
// to one step around the value.
#include <string>
#include <vector>

namespace tapegrad::attention_study {

std::vector<double> nice_ticks(double lo, double hi, int max_ticks);

// Labels for evenly spaced ticks, all with the decimals their step needs ("0", "0.5", "1.0";
// "50", "100"), scientific when the step is below 0.001 or the values reach 1e5.
std::vector<std::string> tick_labels(const std::vector<double>& ticks);

}  // namespace tapegrad::attention_study
