#include "nn/label_smoothing.h"

#include <string>

#include <xtensor/xview.hpp>

#include "autograd/base/checks.h"
#include "autograd/ops/loss.h"

namespace tapegrad::nn {

template <class T>
LabelSmoothing<T>::LabelSmoothing(std::size_t size, Index padding_idx, double smoothing)
    : size_(size), padding_idx_(padding_idx), smoothing_(smoothing) {
  if (size < 3) {
    throw ValueError("LabelSmoothing: size must be at least 3 (smoothing is spread over size - 2 classes), got " +
                     std::to_string(size));
  }
  if (padding_idx < 0 || padding_idx >= static_cast<Index>(size)) {
    throw ValueError("LabelSmoothing: padding_idx " + std::to_string(padding_idx) + " is outside [0, " +
                     std::to_string(size) + ")");
  }
  if (!(smoothing >= 0.0 && smoothing <= 1.0)) {
    throw ValueError("LabelSmoothing: smoothing must be in [0, 1], got " + format_number(smoothing));
  }
}

template <class T>
Tensor<T> LabelSmoothing<T>::forward(const Tensor<T>& x, const IndexArray& target) {
  require_defined(x, "LabelSmoothing", "x");
  const Shape& xs = x.shape();
  const Shape ts(target.shape().begin(), target.shape().end());
  if (xs.size() != 2 || xs[1] != size_ || ts != Shape{xs[0]}) {
    throw ShapeError("LabelSmoothing: x must be [N, " + std::to_string(size_) + "] and target [N], got x " +
                     format_shape(xs) + " and target " + format_shape(ts));
  }
  const auto pad = static_cast<std::size_t>(padding_idx_);
  true_dist_ = xt::xarray<T>::from_shape(xs);
  true_dist_.fill(static_cast<T>(smoothing_ / static_cast<double>(size_ - 2)));
  for (std::size_t n = 0; n < xs[0]; ++n) {
    const Index t = target(n);
    if (t < 0 || t >= static_cast<Index>(size_)) {
      throw ValueError("LabelSmoothing: target " + std::to_string(t) + " at position " + std::to_string(n) +
                       " is outside [0, " + std::to_string(size_) + ") (x " + format_shape(xs) + ")");
    }
    auto row = xt::row(true_dist_, static_cast<std::ptrdiff_t>(n));
    if (static_cast<std::size_t>(t) == pad) {
      row.fill(T(0));
      continue;
    }
    row(static_cast<std::size_t>(t)) = static_cast<T>(1.0 - smoothing_);
    row(pad) = T(0);
  }
  return kl_div(x, Tensor<T>(true_dist_), Reduction::Sum);
}

template class LabelSmoothing<float>;
template class LabelSmoothing<double>;

}  // namespace tapegrad::nn
