#include "study/attribution/layer_maps.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "autograd/base/errors.h"
#include "autograd/base/checks.h"

namespace tapegrad::study::detail {

namespace {

std::string layer_name(std::string_view argument, std::size_t layer) {
  return std::string(argument) + "[" + std::to_string(layer) + "]";
}

// ValueError naming the first NaN or infinite entry of a [batch, heads, seq_q, seq_k] map by its
// four indices: every method would otherwise skip it (a NaN fails each comparison) or spread it.
template <class T>
void require_finite(const xt::xarray<T>& map, std::string_view function, std::string_view argument,
                    std::size_t layer) {
  const T* values = map.data();
  const auto bad = std::find_if(values, values + map.size(), [](T v) { return !std::isfinite(v); });
  if (bad == values + map.size()) return;
  const auto& s = map.shape();
  const auto at = static_cast<std::size_t>(bad - values);
  throw ValueError(std::string(function) + ": " + layer_name(argument, layer) + " holds " + format_number(double(*bad)) +
                   " at batch " + std::to_string(at / (s[1] * s[2] * s[3])) + ", head " +
                   std::to_string(at / (s[2] * s[3]) % s[1]) + ", query " + std::to_string(at / s[3] % s[2]) +
                   ", key " + std::to_string(at % s[3]) +
                   "; attention maps and their gradients must be finite (a NaN or infinite loss upstream?)");
}

}  // namespace

template <class T>
MapSizes check_layer_maps(std::span<const xt::xarray<T>> maps, std::string_view function,
                          std::string_view argument, bool square) {
  if (maps.empty()) {
    throw ValueError(std::string(function) + ": argument '" + std::string(argument) +
                     "' is an empty list of layers (give one map per attention module, in forward order)");
  }
  MapSizes sizes;
  for (std::size_t l = 0; l < maps.size(); ++l) {
    const auto& shape = maps[l].shape();
    if (shape.size() != 4) {
      throw ShapeError(std::string(function) + ": " + layer_name(argument, l) +
                       " must be [batch, heads, seq_q, seq_k], got " + format_shape(shape));
    }
    if (shape[1] == 0) {
      throw ShapeError(std::string(function) + ": " + layer_name(argument, l) + " has no heads, got " +
                       format_shape(shape) + " (the mean over heads needs at least one)");
    }
    if (square && shape[2] != shape[3]) {
      throw ShapeError(std::string(function) + ": " + layer_name(argument, l) +
                       " must be square self-attention maps [batch, heads, seq, seq], got " + format_shape(shape));
    }
    if (l == 0) {
      sizes = {shape[0], shape[2], shape[3]};
    } else if (shape[0] != sizes.batch || shape[2] != sizes.rows || shape[3] != sizes.cols) {
      throw ShapeError(std::string(function) + ": " + layer_name(argument, l) + " has shape " + format_shape(shape) +
                       " but " + layer_name(argument, 0) + " has " + format_shape(maps[0].shape()) +
                       " (every layer needs the same batch, seq_q and seq_k)");
    }
    require_finite(maps[l], function, argument, l);
  }
  return sizes;
}

template <class T>
void check_gradients(std::span<const xt::xarray<T>> attention, std::span<const xt::xarray<T>> gradients,
                     std::string_view function, std::string_view attention_argument,
                     std::string_view gradient_argument) {
  if (attention.size() != gradients.size()) {
    throw ValueError(std::string(function) + ": " + std::to_string(attention.size()) + " layers in '" +
                     std::string(attention_argument) + "' but " + std::to_string(gradients.size()) + " in '" +
                     std::string(gradient_argument) + "' (one dL/dA per map)");
  }
  for (std::size_t l = 0; l < attention.size(); ++l) {
    if (attention[l].shape() != gradients[l].shape()) {
      throw ShapeError(std::string(function) + ": " + layer_name(gradient_argument, l) + " has shape " +
                       format_shape(gradients[l].shape()) + " but " + layer_name(attention_argument, l) + " has " +
                       format_shape(attention[l].shape()));
    }
    require_finite(gradients[l], function, gradient_argument, l);
  }
}

template <class T>
Matrix<T> mean_over_heads(const xt::xarray<T>& attention, std::size_t b) {
  const auto& s = attention.shape();
  Matrix<T> m = xt::zeros<T>({s[2], s[3]});
  for (std::size_t h = 0; h < s[1]; ++h)
    for (std::size_t i = 0; i < s[2]; ++i)
      for (std::size_t j = 0; j < s[3]; ++j) m(i, j) += attention(b, h, i, j);
  return m / static_cast<T>(s[1]);
}

template <class T>
Matrix<T> positive_gradient_mean_over_heads(const xt::xarray<T>& attention, const xt::xarray<T>& gradient,
                                            std::size_t b) {
  const auto& s = attention.shape();
  Matrix<T> m = xt::zeros<T>({s[2], s[3]});
  for (std::size_t h = 0; h < s[1]; ++h)
    for (std::size_t i = 0; i < s[2]; ++i)
      for (std::size_t j = 0; j < s[3]; ++j) {
        const T product = attention(b, h, i, j) * gradient(b, h, i, j);
        if (product > T(0)) m(i, j) += product;
      }
  return m / static_cast<T>(s[1]);
}

template <class T>
Matrix<T> identity(std::size_t n) {
  Matrix<T> m = xt::zeros<T>({n, n});
  for (std::size_t i = 0; i < n; ++i) m(i, i) = T(1);
  return m;
}

template <class T>
Matrix<T> matmul(const Matrix<T>& a, const Matrix<T>& b) {
  const std::size_t n = a.shape(0), k = a.shape(1), m = b.shape(1);
  Matrix<T> out = xt::zeros<T>({n, m});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t p = 0; p < k; ++p)
      for (std::size_t j = 0; j < m; ++j) out(i, j) += a(i, p) * b(p, j);
  return out;
}

template <class T>
void normalize_rows(Matrix<T>& m, std::string_view function, std::size_t layer, std::size_t b) {
  for (std::size_t i = 0; i < m.shape(0); ++i) {
    T total = T(0);
    for (std::size_t j = 0; j < m.shape(1); ++j) total += m(i, j);
    if (!(total > T(0))) {
      throw ValueError(std::string(function) + ": row " + std::to_string(i) + " of layer " + std::to_string(layer) +
                       ", sequence " + std::to_string(b) + " sums to " + format_number(double(total)) +
                       " after the residual is added; it cannot be normalised (are the maps attention weights?)");
    }
    for (std::size_t j = 0; j < m.shape(1); ++j) m(i, j) /= total;
  }
}

template <class T>
void store_sequence(xt::xarray<T>& out, std::size_t b, const Matrix<T>& m) {
  for (std::size_t i = 0; i < m.shape(0); ++i)
    for (std::size_t j = 0; j < m.shape(1); ++j) out(b, i, j) = m(i, j);
}

#define TAPEGRAD_LAYER_MAPS(T)                                                                                   \
  template MapSizes check_layer_maps<T>(std::span<const xt::xarray<T>>, std::string_view, std::string_view, bool); \
  template void check_gradients<T>(std::span<const xt::xarray<T>>, std::span<const xt::xarray<T>>, std::string_view, \
                                   std::string_view, std::string_view);                                          \
  template Matrix<T> mean_over_heads<T>(const xt::xarray<T>&, std::size_t);                                      \
  template Matrix<T> positive_gradient_mean_over_heads<T>(const xt::xarray<T>&, const xt::xarray<T>&, std::size_t); \
  template Matrix<T> identity<T>(std::size_t);                                                                   \
  template Matrix<T> matmul<T>(const Matrix<T>&, const Matrix<T>&);                                              \
  template void normalize_rows<T>(Matrix<T>&, std::string_view, std::size_t, std::size_t);                       \
  template void store_sequence<T>(xt::xarray<T>&, std::size_t, const Matrix<T>&);
TAPEGRAD_LAYER_MAPS(float)
TAPEGRAD_LAYER_MAPS(double)
#undef TAPEGRAD_LAYER_MAPS

}  // namespace tapegrad::study::detail
