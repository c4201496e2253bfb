#pragma once
// Slices of a hook point's tensor along one axis (a head on axis 1 of the attention points, a
// position on axis 1 of the residual stream): what exact patching replaces and what attribution
// patching sums over.
#include <algorithm>
#include <cstddef>

#include <xtensor/xarray.hpp>

namespace tapegrad::study {

// Calls f(offset, length) for each contiguous run of `shape`'s row-major elements that lie in
// slice `index` along `axis`.
template <class Shape, class F>
void for_each_slice_run(const Shape& shape, std::size_t axis, std::size_t index, F&& f) {
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  for (std::size_t o = 0; o < outer; ++o) f((o * shape[axis] + index) * inner, inner);
}

// x with slice `index` along `axis` taken from `source` (of x's shape).
template <class T>
xt::xarray<T> with_slice_from(const xt::xarray<T>& x, const xt::xarray<T>& source, std::size_t axis,
                              std::size_t index) {
  xt::xarray<T> out = x;
  for_each_slice_run(x.shape(), axis, index, [&](std::size_t at, std::size_t n) {
    std::copy(source.data() + at, source.data() + at + n, out.data() + at);
  });
  return out;
}

// The sum, over slice `index` along `axis`, of a * b (a and b of one shape), in double.
template <class T>
double slice_dot(const xt::xarray<T>& a, const xt::xarray<T>& b, std::size_t axis, std::size_t index) {
  double sum = 0;
  for_each_slice_run(a.shape(), axis, index, [&](std::size_t at, std::size_t n) {
    for (std::size_t i = at; i < at + n; ++i) sum += double(a.data()[i]) * double(b.data()[i]);
  });
  return sum;
}

}  // namespace tapegrad::study
