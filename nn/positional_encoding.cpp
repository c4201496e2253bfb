#include "nn/positional_encoding.h"

#include <cmath>

#include "autograd/ops/operators.h"
#include "autograd/ops/shape.h"

namespace tapegrad::nn {

template <class T>
xt::xarray<T> sinusoidal_table(std::size_t max_len, std::size_t d_model) {
  xt::xarray<T> table = xt::xarray<T>::from_shape({max_len, d_model});
  for (std::size_t pos = 0; pos < max_len; ++pos) {
    for (std::size_t i = 0; i < d_model; ++i) {
      // Columns 2i and 2i+1 share the frequency 1 / 10000^(2i/d_model).
      const double angle = static_cast<double>(pos) /
                           std::pow(10000.0, static_cast<double>(i - i % 2) / static_cast<double>(d_model));
      table(pos, i) = static_cast<T>(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return table;
}

template <class T>
PositionalEncoding<T>::PositionalEncoding(std::size_t d_model, std::size_t max_len)
    : d_model_(d_model), max_len_(max_len), table_(sinusoidal_table<T>(max_len, d_model)) {
  if (d_model == 0 || max_len == 0) {
    throw ValueError("PositionalEncoding: d_model and max_len must be positive, got " + std::to_string(d_model) +
                     " and " + std::to_string(max_len));
  }
}

template <class T>
Tensor<T> PositionalEncoding<T>::forward(const Tensor<T>& x) {
  if (x.ndim() < 2 || x.size(-1) != d_model_ || x.size(-2) > max_len_) {
    throw ShapeError("PositionalEncoding(d_model=" + std::to_string(d_model_) + ", max_len=" + std::to_string(max_len_) +
                     "): input " + x.describe() + " must be [..., seq <= max_len, d_model]");
  }
  return x + narrow(table_, 0, 0, static_cast<Index>(x.size(-2)));
}

template xt::xarray<float> sinusoidal_table<float>(std::size_t, std::size_t);
template xt::xarray<double> sinusoidal_table<double>(std::size_t, std::size_t);
template class PositionalEncoding<float>;
template class PositionalEncoding<double>;

}  // namespace tapegrad::nn
