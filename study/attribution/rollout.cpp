#include "study/attribution/rollout.h"

#include "study/attribution/layer_maps.h"

namespace tapegrad::study {

namespace {

// R = Â_L ··· Â_1 per sequence, Â_l = layer_matrix(l, b) with its rows normalised.
template <class T, class LayerMatrix>
xt::xarray<T> rollout(const detail::MapSizes& sizes, std::size_t layers, const char* function,
                      LayerMatrix&& layer_matrix) {
  xt::xarray<T> out = xt::zeros<T>({sizes.batch, sizes.rows, sizes.cols});
  for (std::size_t b = 0; b < sizes.batch; ++b) {
    detail::Matrix<T> r = detail::identity<T>(sizes.rows);
    for (std::size_t l = 0; l < layers; ++l) {
      detail::Matrix<T> a = layer_matrix(l, b);
      detail::normalize_rows(a, function, l, b);
      r = detail::matmul(a, r);  // the later layer on the left
    }
    detail::store_sequence(out, b, r);
  }
  return out;
}

}  // namespace

template <class T>
xt::xarray<T> attention_rollout(std::span<const xt::xarray<T>> attention) {
  constexpr const char* function = "attention_rollout";
  const auto sizes = detail::check_layer_maps(attention, function, "attention", true);
  return rollout<T>(sizes, attention.size(), function, [&](std::size_t l, std::size_t b) {
    return detail::Matrix<T>(T(0.5) * detail::mean_over_heads(attention[l], b) +
                             T(0.5) * detail::identity<T>(sizes.rows));
  });
}

template <class T>
xt::xarray<T> gradient_weighted_rollout(std::span<const xt::xarray<T>> attention,
                                        std::span<const xt::xarray<T>> gradients) {
  constexpr const char* function = "gradient_weighted_rollout";
  const auto sizes = detail::check_layer_maps(attention, function, "attention", true);
  detail::check_gradients(attention, gradients, function, "attention", "gradients");
  return rollout<T>(sizes, attention.size(), function, [&](std::size_t l, std::size_t b) {
    return detail::Matrix<T>(detail::positive_gradient_mean_over_heads(attention[l], gradients[l], b) +
                             detail::identity<T>(sizes.rows));
  });
}

template xt::xarray<float> attention_rollout<float>(std::span<const xt::xarray<float>>);
template xt::xarray<double> attention_rollout<double>(std::span<const xt::xarray<double>>);
template xt::xarray<float> gradient_weighted_rollout<float>(std::span<const xt::xarray<float>>,
                                                            std::span<const xt::xarray<float>>);
template xt::xarray<double> gradient_weighted_rollout<double>(std::span<const xt::xarray<double>>,
                                                              std::span<const xt::xarray<double>>);

}  // namespace tapegrad::study
