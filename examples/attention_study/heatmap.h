#pragma once
// A labelled heatmap of a [rows, cols] matrix, e.g. an attention map [seq_q, seq_k]:
//
//    title lines
//               col_axis
//               c0 c1 c2 ...                 hi
//    r  r0     [cell][cell][cell]    [colour  ..
//    o  r1     [cell][cell][cell]     bar]   (0 for a diverging scale)
//    w  ...                                  lo
//    (masked cells: grey with a diagonal, and a legend line under the grid when there are any)
//
// Cell (i, j) shows values[i * cols + j], coloured by u = (v - lo) / (hi - lo) on the sequential
// scale (viridis) or 2u - 1 on the diverging one (blue-white-red; pass lo = -hi so that 0 is
// white). lo == hi colours every cell with the scale's middle.
#include <string>
#include <vector>

#include "examples/attention_study/image.h"

namespace tapegrad::attention_study {

enum class ColourScale { kSequential, kDiverging };

struct HeatmapSpec {
  std::vector<std::string> title;       // one or more lines
  std::vector<std::string> row_labels;  // top to bottom
  std::vector<std::string> col_labels;  // left to right
  std::string row_axis, col_axis;       // e.g. "query", "key"
  std::vector<double> values;           // rows * cols, row-major
  std::vector<bool> masked;             // empty, or rows * cols: true = drawn as masked, not coloured
  ColourScale scale = ColourScale::kSequential;
  double lo = 0.0, hi = 1.0;
};

// Where the cells landed: cell (i, j) covers [grid_x + j * cell, +cell) x [grid_y + i * cell, +cell).
struct HeatmapGeometry {
  int grid_x = 0, grid_y = 0, cell = 0;
};

// cell = pixels per matrix entry (>= 8). Throws std::invalid_argument when the labels, values or
// mask do not match rows x cols.
Image render_heatmap(const HeatmapSpec& spec, int cell, HeatmapGeometry* geometry = nullptr);

}  // namespace tapegrad::attention_study
