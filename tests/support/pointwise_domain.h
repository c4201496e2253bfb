#pragma once
// Inputs for the pointwise ops of autograd/ops/pointwise_table.h, drawn from each row's domain.
#include <cmath>
#include <vector>

#include "autograd/base/generator.h"
#include "autograd/core/tensor.h"

namespace tapegrad::testing {

enum class PointwiseDomain { any, positive, above_minus_one, nonzero };

// Uniform values of `shape` in the domain (see the table's header), from their own seed: away from
// the points where the op or its derivative is not smooth, by more than gradcheck's step.
template <class T>
xt::xarray<T> pointwise_inputs(PointwiseDomain domain, const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  switch (domain) {
    case PointwiseDomain::any:
      return Tensor<T>::uniform(shape, gen, T(-2), T(2)).value();
    case PointwiseDomain::positive:
      return Tensor<T>::uniform(shape, gen, T(0.1), T(2)).value();
    case PointwiseDomain::above_minus_one:
      return Tensor<T>::uniform(shape, gen, T(-0.9), T(2)).value();
    case PointwiseDomain::nonzero: {
      xt::xarray<T> magnitude = Tensor<T>::uniform(shape, gen, T(0.1), T(2)).value();
      const xt::xarray<T> coin = Tensor<T>::uniform(shape, gen, T(0), T(1)).value();
      for (std::size_t i = 0; i < magnitude.size(); ++i) magnitude.data()[i] *= coin.data()[i] < T(0.5) ? T(-1) : T(1);
      return magnitude;
    }
  }
  return {};
}

// The scalars an op with a scalar is tested at, from the row's `scalars` column: both signs, an
// integer and a fraction; for `positive` (rpow's base), positive ones only.
template <class T>
std::vector<T> pointwise_scalars(PointwiseDomain scalars) {
  if (scalars == PointwiseDomain::positive) return {T(2.5), T(1.5), T(3), T(0.5)};
  return {T(2.5), T(-1.5), T(3), T(0.5)};
}

}  // namespace tapegrad::testing
