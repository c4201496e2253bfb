#include "examples/attention_study/line_chart.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "examples/attention_study/font.h"
#include "examples/attention_study/format.h"
#include "examples/attention_study/ticks.h"

namespace tapegrad::attention_study {

namespace {
constexpr int kMargin = 14;
constexpr int kScale = 2;
constexpr int kPlotWidth = 720;
constexpr int kPlotHeight = 320;
constexpr int kSwatch = 24;
}  // namespace

Image render_line_chart(const LineChartSpec& spec) {
  if (spec.series.empty()) throw std::invalid_argument("render_line_chart('" + spec.title + "'): no series");
  std::size_t n = 0;
  double lo = 0.0, hi = 0.0;
  bool first = true;
  for (const Series& s : spec.series) {
    if (s.y.empty())
      throw std::invalid_argument("render_line_chart('" + spec.title + "'): series '" + s.label + "' is empty");
    n = std::max(n, s.y.size());
    for (const double v : s.y) {
      if (!std::isfinite(v)) {
        throw std::invalid_argument("render_line_chart('" + spec.title + "'): series '" + s.label + "' holds " +
                                    short_number(v));
      }
      lo = first ? v : std::min(lo, v);
      hi = first ? v : std::max(hi, v);
      first = false;
    }
  }
  // Losses are >= 0: anchor the axis at 0 so the curve's drop reads at its true size.
  const std::vector<double> y_ticks = nice_ticks(std::min(lo, 0.0), hi, 6);
  const std::vector<double> x_ticks = nice_ticks(1.0, static_cast<double>(std::max<std::size_t>(n, 2)), 8);
  const double y0 = y_ticks.front(), y1 = y_ticks.back();
  const double x0 = 1.0, x1 = static_cast<double>(std::max<std::size_t>(n, 2));
  int y_tick_w = 0;
  const std::vector<std::string> y_labels = tick_labels(y_ticks), x_labels = tick_labels(x_ticks);
  for (const auto& label : y_labels) y_tick_w = std::max(y_tick_w, text_width(label, kScale));
  const int line = text_height(kScale);

  const int legend_y = kMargin + line + 10;
  const int plot_y = legend_y + line + 14;
  const int plot_x = kMargin + line + 10 + y_tick_w + 8;
  const int ticks_y = plot_y + kPlotHeight + 8;
  const int x_title_y = ticks_y + line + 8;
  const int width = std::max(plot_x + kPlotWidth + 30 + kMargin, 2 * kMargin + text_width(spec.title, kScale));
  const int height = x_title_y + line + kMargin;
  const auto px = [&](double x) { return plot_x + static_cast<int>(std::lround((x - x0) / (x1 - x0) * kPlotWidth)); };
  const auto py = [&](double y) {
    return plot_y + kPlotHeight - static_cast<int>(std::lround((y - y0) / (y1 - y0) * kPlotHeight));
  };

  Image image(width, height);
  draw_text(image, kMargin, kMargin, spec.title, kBlack, kScale);
  int lx = kMargin;
  for (const Series& s : spec.series) {
    image.fill_rect(lx, legend_y + 3 * kScale, kSwatch, s.thickness + 1, s.colour);
    draw_text(image, lx + kSwatch + 6, legend_y, s.label, kBlack, kScale);
    lx += kSwatch + 6 + text_width(s.label, kScale) + 24;
  }
  for (std::size_t k = 0; k < y_ticks.size(); ++k) {
    const int y = py(y_ticks[k]);
    image.fill_rect(plot_x, y, kPlotWidth + 1, 1, kLightGrey);
    const std::string& label = y_labels[k];
    draw_text(image, plot_x - 8 - text_width(label, kScale), y - 7 * kScale / 2, label, kGrey, kScale);
  }
  for (std::size_t k = 0; k < x_ticks.size(); ++k) {
    if (x_ticks[k] < x0 || x_ticks[k] > x1) continue;
    const int x = px(x_ticks[k]);
    image.fill_rect(x, plot_y, 1, kPlotHeight + 1, kLightGrey);
    const std::string& label = x_labels[k];
    draw_text(image, x - text_width(label, kScale) / 2, ticks_y, label, kGrey, kScale);
  }
  image.fill_rect(plot_x, plot_y, 1, kPlotHeight + 1, kBlack);
  image.fill_rect(plot_x, plot_y + kPlotHeight, kPlotWidth + 1, 1, kBlack);
  for (const Series& s : spec.series) {
    for (std::size_t i = 1; i < s.y.size(); ++i) {
      image.line(px(static_cast<double>(i)), py(s.y[i - 1]), px(static_cast<double>(i + 1)), py(s.y[i]), s.colour,
                 s.thickness);
    }
    if (s.y.size() == 1) image.fill_rect(px(1.0) - 2, py(s.y[0]) - 2, 5, 5, s.colour);
  }
  draw_text(image, plot_x + (kPlotWidth - text_width(spec.x_label, kScale)) / 2, x_title_y, spec.x_label, kBlack,
            kScale);
  draw_text_vertical(image, kMargin, plot_y + (kPlotHeight - text_width(spec.y_label, kScale)) / 2, spec.y_label,
                     kBlack, kScale);
  return image;
}

}  // namespace tapegrad::attention_study
