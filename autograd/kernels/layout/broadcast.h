#pragma once
// Broadcasting: the result shape of two shapes, and the reduction of a gradient back to an
// input's shape (the one shared un-broadcast of every broadcasting op's backward).
#include <string_view>
#include <vector>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

#include "autograd/base/errors.h"

namespace tapegrad::kernels {

// NumPy/PyTorch rule: align from the right; sizes must be equal or 1. Throws ShapeError naming op
// and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

// True when `from` broadcasts to `to` (one-sided: `to` is not changed).
bool broadcasts_to(const Shape& from, const Shape& to);

// The element strides of a row-major array of `shape` read at `out_shape`, which it broadcasts to:
// one per axis of out_shape, 0 along the axes `shape` lacks or has of size 1.
std::vector<std::size_t> broadcast_strides(const Shape& shape, const Shape& out_shape);

// Sums g over the axes that broadcasting added or stretched, giving a new array of `shape` (a
// copy when nothing is reduced). Requires broadcasts_to(shape, g.shape()).
template <class T> xt::xarray<T> sum_to(const xt::xarray<T>& g, const Shape& shape);

}  // namespace tapegrad::kernels
