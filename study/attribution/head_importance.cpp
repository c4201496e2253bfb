#include "study/attribution/head_importance.h"

#include <cmath>
#include <string>

#include "autograd/base/errors.h"
#include "study/attribution/layer_maps.h"

namespace tapegrad::study {

template <class T>
xt::xarray<T> head_importance(std::span<const xt::xarray<T>> attention, std::span<const xt::xarray<T>> gradients,
                              bool normalize_per_layer) {
  constexpr const char* function = "head_importance";
  const auto sizes = detail::check_layer_maps(attention, function, "attention", false);
  detail::check_gradients(attention, gradients, function, "attention", "gradients");
  const std::size_t heads = attention[0].shape()[1];
  for (std::size_t l = 1; l < attention.size(); ++l) {
    if (attention[l].shape()[1] != heads) {
      throw ShapeError(std::string(function) + ": attention[" + std::to_string(l) + "] has shape " +
                       format_shape(attention[l].shape()) + " but attention[0] has " +
                       format_shape(attention[0].shape()) + " (the result is [layers, heads]: every layer needs " +
                       std::to_string(heads) + " heads)");
    }
  }
  xt::xarray<T> out = xt::zeros<T>({attention.size(), heads});
  for (std::size_t l = 0; l < attention.size(); ++l) {
    for (std::size_t h = 0; h < heads; ++h) {
      T mean_abs = T(0);
      for (std::size_t b = 0; b < sizes.batch; ++b) {
        T dxi = T(0);  // ∂L/∂ξ_h for sequence b
        for (std::size_t q = 0; q < sizes.rows; ++q)
          for (std::size_t k = 0; k < sizes.cols; ++k) dxi += attention[l](b, h, q, k) * gradients[l](b, h, q, k);
        mean_abs += std::abs(dxi);
      }
      out(l, h) = mean_abs / static_cast<T>(sizes.batch);
    }
    if (normalize_per_layer) {
      T norm = T(0);
      for (std::size_t h = 0; h < heads; ++h) norm += out(l, h) * out(l, h);
      norm = std::sqrt(norm);
      if (norm > T(0))
        for (std::size_t h = 0; h < heads; ++h) out(l, h) /= norm;
    }
  }
  return out;
}

template xt::xarray<float> head_importance<float>(std::span<const xt::xarray<float>>,
                                                  std::span<const xt::xarray<float>>, bool);
template xt::xarray<double> head_importance<double>(std::span<const xt::xarray<double>>,
                                                    std::span<const xt::xarray<double>>, bool);

}  // namespace tapegrad::study
