#include "compare.h"

#include <algorithm>
#include <cmath>

#include "autograd/base/checks.h"

namespace tapegrad::pytorch_samples {

std::optional<std::string> mismatch(const xt::xarray<double>& got, const xt::xarray<double>& want) {
  if (!std::equal(got.shape().begin(), got.shape().end(), want.shape().begin(), want.shape().end())) {
    return "shape " + format_shape(got.shape()) + ", PyTorch's " + format_shape(want.shape());
  }
  double scale = 0;  // the largest finite |want|
  for (double w : want) {
    if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = got.flat(i), w = want.flat(i);
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;
    const bool close = std::isfinite(g) && std::isfinite(w) &&
                       std::abs(g - w) <= relative_tolerance * std::max({std::abs(g), std::abs(w), scale});
    if (!close) {
      // format_number's 6 digits can print both alike: say by how much they differ too.
      const double relative = std::abs(g - w) / std::max({std::abs(g), std::abs(w), scale});
      return "element " + std::to_string(i) + " of " + format_shape(want.shape()) + " is " + format_number(g) +
             ", PyTorch's " + format_number(w) + " (relative difference " + format_number(relative) + ")";
    }
  }
  return std::nullopt;
}

}  // namespace tapegrad::pytorch_samples
