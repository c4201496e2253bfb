#pragma once
// Slices of a hook point's tensor: what exact patching replaces and what attribution patching
// sums over. A slice fixes the index along one axis or more and spans the others: a head (axis 1
// of the attention points), a position (axis 1 of the residual stream), a head's query (axes
// {1, 2}), an attention cell (axes {1, 2, 3} of hook_pattern: head, query, key). The slices of a
// point are numbered row-major over the extents of their axes.
#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

namespace tapegrad::study {

// The axes slices fix, in increasing order: `1` or `{1, 2, 3}` where a function takes them.
struct SliceAxes {
  std::vector<std::size_t> axes;
  SliceAxes(std::size_t axis) : axes{axis} {}  // NOLINT(google-explicit-constructor): 1 reads as {1}
  SliceAxes(std::initializer_list<std::size_t> list) : axes(list) {}

  // "axis 1" or "axes {1, 2, 3}": how messages name them.
  std::string describe() const {
    if (axes.size() == 1) return "axis " + std::to_string(axes[0]);
    std::string out = "axes {";
    for (std::size_t k = 0; k < axes.size(); ++k) out += (k ? ", " : "") + std::to_string(axes[k]);
    return out + "}";
  }
  // The number of slices of a tensor of `shape`: the product of its extents along the axes.
  template <class Shape>
  std::size_t count(const Shape& shape) const {
    std::size_t n = 1;
    for (std::size_t a : axes) n *= shape[a];
    return n;
  }
  // Slice `index`'s index along each axis.
  template <class Shape>
  std::vector<std::size_t> coordinates(const Shape& shape, std::size_t index) const {
    std::vector<std::size_t> at(axes.size());
    for (std::size_t k = axes.size(); k-- > 0;) {
      at[k] = index % shape[axes[k]];
      index /= shape[axes[k]];
    }
    return at;
  }
};

// Calls f(offset) for each row-major element of a tensor of `shape` in slice `index`.
template <class Shape, class F>
void for_each_slice_element(const Shape& shape, const SliceAxes& slice, std::size_t index, F&& f) {
  const std::size_t n = shape.size();
  std::vector<std::size_t> strides(n, 1);
  for (std::size_t d = n; d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  const std::vector<std::size_t> at = slice.coordinates(shape, index);
  std::size_t base = 0;
  std::vector<std::size_t> free;  // the axes the slice spans
  for (std::size_t d = 0, k = 0; d < n; ++d) {
    if (k < slice.axes.size() && slice.axes[k] == d) base += at[k++] * strides[d];
    else free.push_back(d);
  }
  for (std::size_t d : free)
    if (shape[d] == 0) return;
  std::vector<std::size_t> counter(free.size(), 0);
  for (;;) {
    std::size_t offset = base;
    for (std::size_t i = 0; i < free.size(); ++i) offset += counter[i] * strides[free[i]];
    f(offset);
    std::size_t i = free.size();
    for (; i > 0; --i) {  // the next element: an odometer over the free axes, last fastest
      if (++counter[i - 1] < shape[free[i - 1]]) break;
      counter[i - 1] = 0;
    }
    if (i == 0) return;
  }
}

// Slice `index` of `into` overwritten with the same slice of `source` (of into's shape).
template <class T>
void copy_slice(const xt::xarray<T>& source, xt::xarray<T>& into, const SliceAxes& slice, std::size_t index) {
  for_each_slice_element(into.shape(), slice, index, [&](std::size_t at) { into.data()[at] = source.data()[at]; });
}

// x with slice `index` taken from `source` (of x's shape).
template <class T>
xt::xarray<T> with_slice_from(const xt::xarray<T>& x, const xt::xarray<T>& source, const SliceAxes& slice,
                              std::size_t index) {
  xt::xarray<T> out = x;
  copy_slice(source, out, slice, index);
  return out;
}

// The sum over slice `index` of a * b (a and b of one shape), in double.
template <class T>
double slice_dot(const xt::xarray<T>& a, const xt::xarray<T>& b, const SliceAxes& slice, std::size_t index) {
  double sum = 0;
  for_each_slice_element(a.shape(), slice, index,
                         [&](std::size_t at) { sum += double(a.data()[at]) * double(b.data()[at]); });
  return sum;
}

// sum a * b over the whole arrays (of one shape), in double; four running sums, so the additions
// need not wait for each other (EAP takes one such sum per edge).
template <class T>
double whole_dot(const xt::xarray<T>& a, const xt::xarray<T>& b) {
  double sums[4] = {0, 0, 0, 0};
  const T* x = a.data();
  const T* y = b.data();
  const std::size_t n = a.size(), whole = n - n % 4;
  for (std::size_t i = 0; i < whole; i += 4)
    for (std::size_t k = 0; k < 4; ++k) sums[k] += double(x[i + k]) * double(y[i + k]);
  for (std::size_t i = whole; i < n; ++i) sums[0] += double(x[i]) * double(y[i]);
  return (sums[0] + sums[1]) + (sums[2] + sums[3]);
}

}  // namespace tapegrad::study
