#pragma once
// Colour scales for the heatmaps, each a piecewise-linear interpolation between a few anchors:
//   sequential(t), t in [0, 1]: viridis (matplotlib's anchors at t = 0, 1/8, ..., 1), dark purple
//       -> blue -> green -> yellow; perceptually ordered, readable in grey scale.
//   diverging(t), t in [-1, 1]: blue (-1) -> white (0) -> red (+1) (ColorBrewer RdBu with pure
//       white in the middle), for signed values scaled symmetrically so that 0 is white.
// Values outside the range are clamped; NaN maps to the range's low end.
#include "examples/attention_study/image.h"

namespace tapegrad::attention_study {

Rgb sequential(double t);
Rgb diverging(double t);

}  // namespace tapegrad::attention_study
