#pragma once
// Small inputs the row files build their bad calls from.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "autograd/ops/masking.h"
#include "autograd/core/tensor.h"

namespace tapegrad::bad_inputs {

inline constexpr double nan = std::numeric_limits<double>::quiet_NaN();
inline constexpr double inf = std::numeric_limits<double>::infinity();

// Zeros of a shape (no gradient), ones of a shape that require a gradient, an undefined tensor.
inline Tensor<double> zeros(const Shape& shape) { return Tensor<double>::zeros(shape); }
inline Tensor<double> leaf(const Shape& shape) { return Tensor<double>::ones(shape, true); }
inline Tensor<double> undefined() { return {}; }
inline Generator& gen() {
  thread_local Generator g(0);
  return g;
}
// A mask of a shape, all true.
inline Mask mask_of(const Shape& shape) { return Mask(xt::ones<bool>(shape)); }
// A 1-D index array of the given values.
inline IndexArray one_d(std::initializer_list<Index> values) {
  IndexArray a = IndexArray::from_shape({values.size()});
  std::copy(values.begin(), values.end(), a.begin());
  return a;
}
// Integer indices of a shape, all equal to value.
inline IndexArray indices(const Shape& shape, Index value) {
  IndexArray a = IndexArray::from_shape(shape);
  a.fill(value);
  return a;
}

}  // namespace tapegrad::bad_inputs
