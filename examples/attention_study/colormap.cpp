#include "examples/attention_study/colormap.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace tapegrad::attention_study {

namespace {

constexpr Rgb kViridis[] = {{68, 1, 84},    {72, 40, 120},  {62, 73, 137},  {49, 104, 142}, {38, 130, 142},
                            {31, 158, 137}, {53, 183, 121}, {110, 206, 88}, {253, 231, 37}};
constexpr Rgb kBlueWhiteRed[] = {{33, 102, 172}, {103, 169, 207}, {255, 255, 255}, {239, 138, 98}, {178, 24, 43}};

// anchors spaced evenly over u in [0, 1].
Rgb interpolate(std::span<const Rgb> anchors, double u) {
  u = std::isnan(u) ? 0.0 : std::clamp(u, 0.0, 1.0);
  const double pos = u * static_cast<double>(anchors.size() - 1);
  const std::size_t i = std::min(static_cast<std::size_t>(pos), anchors.size() - 2);
  const double f = pos - static_cast<double>(i);
  const auto mix = [f](std::uint8_t a, std::uint8_t b) {
    return static_cast<std::uint8_t>(std::lround(static_cast<double>(a) + f * (static_cast<double>(b) - a)));
  };
  const Rgb& a = anchors[i];
  const Rgb& b = anchors[i + 1];
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

}  // namespace

Rgb sequential(double t) { return interpolate(kViridis, t); }

Rgb diverging(double t) { return interpolate(kBlueWhiteRed, (t + 1.0) / 2.0); }

}  // namespace tapegrad::attention_study
