#include "study/attribution/attention_flow.h"

#include <string>
#include <vector>

#include "autograd/base/errors.h"
#include "autograd/base/checks.h"
#include "study/attribution/layer_maps.h"
#include "study/attribution/max_flow.h"

namespace tapegrad::study {

namespace {

constexpr const char* kFunction = "attention_flow";

template <class T>
void require_capacities(std::span<const xt::xarray<T>> attention) {
  for (std::size_t l = 0; l < attention.size(); ++l) {
    for (const T v : attention[l]) {
      if (v < T(0)) {  // finite: check_layer_maps refused NaN and infinity
        throw ValueError(std::string(kFunction) + ": attention[" + std::to_string(l) + "] holds " +
                         format_number(double(v)) + "; flow capacities must be finite and >= 0");
      }
    }
  }
}

}  // namespace

template <class T>
xt::xarray<T> attention_flow(std::span<const xt::xarray<T>> attention, bool normalize_rows) {
  const auto sizes = detail::check_layer_maps(attention, kFunction, "attention", true);
  require_capacities(attention);
  const std::size_t n = sizes.rows, layers = attention.size();
  xt::xarray<T> out = xt::zeros<T>({sizes.batch, n, n});
  for (std::size_t b = 0; b < sizes.batch; ++b) {
    // Node of token t at layer l: l * n + t.
    detail::MaxFlow graph((layers + 1) * n);
    for (std::size_t l = 0; l < layers; ++l) {
      detail::Matrix<T> a = T(0.5) * detail::mean_over_heads(attention[l], b) + T(0.5) * detail::identity<T>(n);
      detail::normalize_rows(a, kFunction, l, b);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
          if (a(i, j) > T(0)) graph.add_edge(l * n + j, (l + 1) * n + i, double(a(i, j)));
    }
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> row(n);
      double total = 0.0;
      for (std::size_t j = 0; j < n; ++j) {
        row[j] = graph.max_flow(j, layers * n + i);
        total += row[j];
      }
      for (std::size_t j = 0; j < n; ++j) out(b, i, j) = T(normalize_rows && total > 0.0 ? row[j] / total : row[j]);
    }
  }
  return out;
}

template xt::xarray<float> attention_flow<float>(std::span<const xt::xarray<float>>, bool);
template xt::xarray<double> attention_flow<double>(std::span<const xt::xarray<double>>, bool);

}  // namespace tapegrad::study
