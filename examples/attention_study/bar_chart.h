#pragma once
// A horizontal bar chart: one labelled bar per value, the value printed at the bar's end, a
// value axis with nice ticks and grid lines, and an optional colour legend under the title.
//
//    title
//    [#] legend  [#] legend
//    label a   |#########          0.52
//    label b   |####  0.21
//              0    0.2   0.4   0.6
//                  value_axis
// Values must be >= 0 (norms); the axis starts at 0.
#include <string>
#include <vector>

#include "examples/attention_study/image.h"

namespace tapegrad::attention_study {

struct Bar {
  std::string label;
  double value = 0.0;
  Rgb colour;
};

struct LegendEntry {
  std::string label;
  Rgb colour;
};

struct BarChartSpec {
  std::string title;
  std::string value_axis;
  std::vector<Bar> bars;
  std::vector<LegendEntry> legend;
};

// Throws std::invalid_argument for no bars or a negative or non-finite value.
Image render_bar_chart(const BarChartSpec& spec);

}  // namespace tapegrad::attention_study
