#pragma once
// A line chart of one or more series over x = 1, 2, ..., n (e.g. the loss per training step),
// with nice ticks and grid lines on both axes, axis titles and a legend of the series.
//
//    title
//    [-] series a   [-] series b
//    y |  *
//    l |   **
//      |     ***_____
//      +----------------
//       1     100    200
//             x_label
#include <string>
#include <vector>

#include "examples/attention_study/image.h"

namespace tapegrad::attention_study {

struct Series {
  std::string label;
  Rgb colour;
  std::vector<double> y;  // y[i] is drawn at x = i + 1
  int thickness = 2;
};

struct LineChartSpec {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

// Throws std::invalid_argument when there is no series, a series is empty, or a value is not
// finite.
Image render_line_chart(const LineChartSpec& spec);

}  // namespace tapegrad::attention_study
