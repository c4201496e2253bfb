#pragma once
// Short numbers for the page's facts and the Markdown tables: 3 significant digits, fixed notation for
// magnitudes in [0.001, 10000) ("0.734", "12.5", "-3.20", "0.00468"), scientific otherwise ("1.25e-04"), "0"
// for zero.
#include <string>

namespace tapegrad::attention_study {

std::string short_number(double v);


}  // namespace tapegrad::attention_study
