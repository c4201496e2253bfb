#include "study/attribution/integrated_gradients.h"

#include <string>

#include "autograd/base/errors.h"
#include "autograd/base/checks.h"

namespace tapegrad::study {

template <class T>
xt::xarray<T> integrated_gradients(const xt::xarray<T>& attention, const AttentionGradientAt<T>& grad_at,
                                   std::size_t steps) {
  if (steps == 0) {
    throw ValueError("integrated_gradients: steps must be at least 1, got 0 (the paper uses 20)");
  }
  if (!grad_at) throw ValueError("integrated_gradients: argument 'grad_at' is an empty function");
  xt::xarray<T> total = xt::zeros<T>(attention.shape());
  for (std::size_t k = 1; k <= steps; ++k) {
    const T alpha = static_cast<T>(k) / static_cast<T>(steps);
    const xt::xarray<T> gradient = grad_at(alpha);
    if (gradient.shape() != attention.shape()) {
      throw ShapeError("integrated_gradients: grad_at(" + format_number(double(alpha)) + ") returned shape " +
                       format_shape(gradient.shape()) + " but attention has shape " + format_shape(attention.shape()));
    }
    total += gradient;
  }
  return attention * total / static_cast<T>(steps);
}

template xt::xarray<float> integrated_gradients<float>(const xt::xarray<float>&, const AttentionGradientAt<float>&,
                                                       std::size_t);
template xt::xarray<double> integrated_gradients<double>(const xt::xarray<double>&,
                                                         const AttentionGradientAt<double>&, std::size_t);

}  // namespace tapegrad::study
