#include "examples/attention_study/bar_chart.h"

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
constexpr int kBarHeight = 20;
constexpr int kBarGap = 6;
constexpr int kPlotWidth = 480;
constexpr int kSwatch = 14;
}  // namespace

Image render_bar_chart(const BarChartSpec& spec) {
  if (spec.bars.empty()) throw std::invalid_argument("render_bar_chart('" + spec.title + "'): no bars");
  double top = 0.0;
  int label_w = 0, value_w = 0;
  for (const Bar& b : spec.bars) {
    if (!std::isfinite(b.value) || b.value < 0.0) {
      throw std::invalid_argument("render_bar_chart('" + spec.title + "'): bar '" + b.label + "' has value " +
                                  short_number(b.value) + ", need a finite value >= 0");
    }
    top = std::max(top, b.value);
    label_w = std::max(label_w, text_width(b.label, kScale));
    value_w = std::max(value_w, text_width(short_number(b.value), kScale));
  }
  const std::vector<double> ticks = nice_ticks(0.0, top > 0.0 ? top : 1.0, 5);
  const double axis_max = ticks.back();
  const int line = text_height(kScale);

  const int legend_y = kMargin + line + 10;
  const int plot_y = legend_y + (spec.legend.empty() ? 0 : line + 12);
  const int plot_x = kMargin + label_w + 10;
  const int plot_h = static_cast<int>(spec.bars.size()) * (kBarHeight + kBarGap) + kBarGap;
  const int ticks_y = plot_y + plot_h + 6;
  const int axis_title_y = ticks_y + line + 8;
  int legend_w = 0;
  for (const auto& e : spec.legend) legend_w += kSwatch + 6 + text_width(e.label, kScale) + 20;
  const int width = std::max({plot_x + kPlotWidth + 10 + value_w + kMargin,
                              2 * kMargin + text_width(spec.title, kScale), 2 * kMargin + legend_w});
  const int height = axis_title_y + line + kMargin;
  const auto x_of = [&](double v) { return plot_x + static_cast<int>(std::lround(v / axis_max * kPlotWidth)); };

  Image image(width, height);
  draw_text(image, kMargin, kMargin, spec.title, kBlack, kScale);
  int lx = kMargin;
  for (const auto& e : spec.legend) {
    image.fill_rect(lx, legend_y + (7 * kScale - kSwatch) / 2, kSwatch, kSwatch, e.colour);
    draw_text(image, lx + kSwatch + 6, legend_y, e.label, kBlack, kScale);
    lx += kSwatch + 6 + text_width(e.label, kScale) + 20;
  }
  const std::vector<std::string> labels = tick_labels(ticks);
  for (std::size_t k = 0; k < ticks.size(); ++k) {
    const int x = x_of(ticks[k]);
    image.fill_rect(x, plot_y, 1, plot_h, kLightGrey);
    const std::string& label = labels[k];
    draw_text(image, x - text_width(label, kScale) / 2, ticks_y, label, kGrey, kScale);
  }
  for (std::size_t i = 0; i < spec.bars.size(); ++i) {
    const Bar& b = spec.bars[i];
    const int y = plot_y + kBarGap + static_cast<int>(i) * (kBarHeight + kBarGap);
    const int text_y = y + (kBarHeight - 7 * kScale) / 2;
    draw_text(image, plot_x - 10 - text_width(b.label, kScale), text_y, b.label, kBlack, kScale);
    const int end = x_of(b.value);
    image.fill_rect(plot_x, y, end - plot_x, kBarHeight, b.colour);
    draw_text(image, end + 6, text_y, short_number(b.value), kBlack, kScale);
  }
  image.fill_rect(plot_x, plot_y, 1, plot_h, kBlack);
  draw_text(image, plot_x + (kPlotWidth - text_width(spec.value_axis, kScale)) / 2, axis_title_y, spec.value_axis,
            kBlack, kScale);
  return image;
}

}  // namespace tapegrad::attention_study
