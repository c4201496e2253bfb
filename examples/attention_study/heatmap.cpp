#include "examples/attention_study/heatmap.h"

#include <algorithm>
#include <stdexcept>

#include "examples/attention_study/colormap.h"
#include "examples/attention_study/font.h"
#include "examples/attention_study/format.h"

namespace tapegrad::attention_study {

namespace {

constexpr int kMargin = 14;
constexpr int kTitleScale = 2;
constexpr int kBarWidth = 18;
constexpr Rgb kMaskFill{214, 214, 214};
constexpr Rgb kMaskLine{150, 150, 150};
constexpr Rgb kGridLine{235, 235, 235};

Rgb cell_colour(const HeatmapSpec& spec, double v) {
  const double u = spec.hi > spec.lo ? (v - spec.lo) / (spec.hi - spec.lo) : 0.5;
  return spec.scale == ColourScale::kSequential ? sequential(u) : diverging(2.0 * u - 1.0);
}

void draw_masked_cell(Image& image, int x, int y, int size) {
  image.fill_rect(x, y, size, size, kMaskFill);
  image.line(x + 2, y + 2, x + size - 3, y + size - 3, kMaskLine);
}

int widest(const std::vector<std::string>& texts, int scale) {
  int w = 0;
  for (const auto& t : texts) w = std::max(w, text_width(t, scale));
  return w;
}

}  // namespace

Image render_heatmap(const HeatmapSpec& spec, int cell, HeatmapGeometry* geometry) {
  const int rows = static_cast<int>(spec.row_labels.size()), cols = static_cast<int>(spec.col_labels.size());
  if (cell < 8 || rows == 0 || cols == 0 || spec.values.size() != static_cast<std::size_t>(rows * cols) ||
      (!spec.masked.empty() && spec.masked.size() != spec.values.size())) {
    throw std::invalid_argument("render_heatmap: need cell >= 8 and rows x cols values (and mask), got cell " +
                                std::to_string(cell) + ", " + std::to_string(rows) + " row labels, " +
                                std::to_string(cols) + " column labels, " + std::to_string(spec.values.size()) +
                                " values, " + std::to_string(spec.masked.size()) + " mask entries");
  }
  const int label_scale = cell >= 24 ? 2 : 1;
  const int line = text_height(label_scale);
  const bool any_masked = std::find(spec.masked.begin(), spec.masked.end(), true) != spec.masked.end();
  const std::string mid_label = spec.scale == ColourScale::kDiverging ? "0" : "";
  const std::vector<std::string> bar_labels = {short_number(spec.hi), mid_label, short_number(spec.lo)};
  const std::string mask_legend = "masked: may not attend";

  // Layout, top to bottom and left to right.
  const int title_line = text_height(kTitleScale) + 6;
  const int col_axis_y = kMargin + static_cast<int>(spec.title.size()) * title_line + 4;
  const int col_labels_y = col_axis_y + line + 4;
  const int grid_y = col_labels_y + line + 6;
  const int row_labels_right = kMargin + line + 8 + widest(spec.row_labels, label_scale);
  const int grid_x = row_labels_right + 6;
  const int grid_w = cols * cell, grid_h = rows * cell;
  const int bar_x = grid_x + grid_w + 20;
  const int bar_labels_x = bar_x + kBarWidth + 6;
  const int legend_y = grid_y + grid_h + 10;
  const int swatch = std::max(cell / 2, line);
  int width = bar_labels_x + widest(bar_labels, label_scale) + kMargin;
  for (const auto& t : spec.title) width = std::max(width, 2 * kMargin + text_width(t, kTitleScale));
  if (any_masked) width = std::max(width, grid_x + swatch + 8 + text_width(mask_legend, label_scale) + kMargin);
  const int height = (any_masked ? legend_y + swatch : grid_y + grid_h) + kMargin;

  Image image(width, height);
  for (std::size_t i = 0; i < spec.title.size(); ++i)
    draw_text(image, kMargin, kMargin + static_cast<int>(i) * title_line, spec.title[i], kBlack, kTitleScale);

  // Axis titles: the key axis centred over the grid, the query axis vertical at the left.
  draw_text(image, grid_x + (grid_w - text_width(spec.col_axis, label_scale)) / 2, col_axis_y, spec.col_axis, kGrey,
            label_scale);
  draw_text_vertical(image, kMargin, grid_y + (grid_h - text_width(spec.row_axis, label_scale)) / 2, spec.row_axis,
                     kGrey, label_scale);
  for (int j = 0; j < cols; ++j) {
    const auto& t = spec.col_labels[j];
    draw_text(image, grid_x + j * cell + (cell - text_width(t, label_scale) + 1) / 2, col_labels_y, t, kBlack,
              label_scale);
  }
  for (int i = 0; i < rows; ++i) {
    const auto& t = spec.row_labels[i];
    draw_text(image, row_labels_right - text_width(t, label_scale), grid_y + i * cell + (cell - 7 * label_scale) / 2, t,
              kBlack, label_scale);
  }

  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const std::size_t k = static_cast<std::size_t>(i * cols + j);
      const int x = grid_x + j * cell, y = grid_y + i * cell;
      if (!spec.masked.empty() && spec.masked[k]) {
        draw_masked_cell(image, x, y, cell);
      } else {
        image.fill_rect(x, y, cell, cell, cell_colour(spec, spec.values[k]));
      }
    }
  }
  // Thin separators keep near-white cells of a diverging map apart from each other.
  for (int j = 1; j < cols; ++j) image.fill_rect(grid_x + j * cell, grid_y, 1, grid_h, kGridLine);
  for (int i = 1; i < rows; ++i) image.fill_rect(grid_x, grid_y + i * cell, grid_w, 1, kGridLine);
  image.outline_rect(grid_x - 1, grid_y - 1, grid_w + 2, grid_h + 2, kGrey);

  // Colour bar, hi at the top: row r shows the value at fraction 1 - r / (h - 1) of the range.
  for (int r = 0; r < grid_h; ++r) {
    const double u = 1.0 - static_cast<double>(r) / std::max(1, grid_h - 1);
    const Rgb c = spec.scale == ColourScale::kSequential ? sequential(u) : diverging(2.0 * u - 1.0);
    image.fill_rect(bar_x, grid_y + r, kBarWidth, 1, c);
  }
  image.outline_rect(bar_x - 1, grid_y - 1, kBarWidth + 2, grid_h + 2, kGrey);
  draw_text(image, bar_labels_x, grid_y, bar_labels[0], kBlack, label_scale);
  draw_text(image, bar_labels_x, grid_y + (grid_h - 7 * label_scale) / 2, bar_labels[1], kBlack, label_scale);
  draw_text(image, bar_labels_x, grid_y + grid_h - 7 * label_scale, bar_labels[2], kBlack, label_scale);

  if (any_masked) {
    draw_masked_cell(image, grid_x, legend_y, swatch);
    draw_text(image, grid_x + swatch + 8, legend_y + (swatch - 7 * label_scale) / 2, mask_legend, kGrey, label_scale);
  }
  if (geometry != nullptr) *geometry = {grid_x, grid_y, cell};
  return image;
}

}  // namespace tapegrad::attention_study
