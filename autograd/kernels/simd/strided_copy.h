#pragma once
// One copy kernel behind every data-moving shape op and the reductions' gradient broadcast:
// walk an index space in row-major order and move each element from a strided source position
// to a strided destination position. permute (permuted source strides), expand and the
// reductions' backward (source stride 0 on stretched axes), slice / narrow / split (a source
// offset and a stepped stride) and concat (a destination offset) are all one call.
//
// Determinism: each destination element is written exactly once, by one task.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

#include "autograd/base/errors.h"
#include "autograd/kernels/layout/merged_axes.h"
#include "autograd/kernels/simd/row_kernels.h"

namespace tapegrad::kernels {

// Strides in elements; signed so that offsets can be stepped back.
using Strides = std::vector<std::ptrdiff_t>;

// Strides of a contiguous row-major array of `shape`.
inline Strides row_major_strides(const Shape& shape) {
  Strides strides(shape.size());
  std::ptrdiff_t stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= static_cast<std::ptrdiff_t>(shape[d]);
  }
  return strides;
}

// For every index i over `shape`:  dst[sum_d i_d * dst_strides[d]] = src[sum_d i_d * src_strides[d]].
// A source stride may be 0 (broadcast). Destination positions must be distinct: rows of the
// index space are written in parallel.
template <class T>
void strided_copy(const Shape& shape, const T* src, const Strides& src_strides, T* dst, const Strides& dst_strides) {
  const std::size_t numel = shape_product(shape);
  if (numel == 0) return;
  const std::vector<WalkAxis<std::ptrdiff_t>> axes = merged_axes<std::ptrdiff_t>(shape, src_strides, dst_strides);
  if (axes.empty()) {
    *dst = *src;
    return;
  }
  const std::size_t outer_dims = axes.size() - 1, inner = axes.back().size;
  const std::ptrdiff_t s_in = axes.back().src, t_in = axes.back().dst;
  parallel_items(numel / inner, inner, [&](std::size_t begin, std::size_t end) {
    // Odometer over the outer axes, started at row `begin`.
    std::vector<std::size_t> index(outer_dims);
    std::ptrdiff_t s_off = 0, t_off = 0;
    for (std::size_t d = outer_dims, r = begin; d-- > 0;) {
      index[d] = r % axes[d].size;
      r /= axes[d].size;
      s_off += static_cast<std::ptrdiff_t>(index[d]) * axes[d].src;
      t_off += static_cast<std::ptrdiff_t>(index[d]) * axes[d].dst;
    }
    for (std::size_t row = begin; row < end; ++row) {
      const T* from = src + s_off;
      T* to = dst + t_off;
      if (s_in == 1 && t_in == 1) {
        std::copy_n(from, inner, to);
      } else {
        for (std::size_t i = 0; i < inner; ++i)
          to[static_cast<std::ptrdiff_t>(i) * t_in] = from[static_cast<std::ptrdiff_t>(i) * s_in];
      }
      for (std::size_t d = outer_dims; d-- > 0;) {
        s_off += axes[d].src;
        t_off += axes[d].dst;
        if (++index[d] < axes[d].size) break;
        s_off -= axes[d].src * static_cast<std::ptrdiff_t>(axes[d].size);
        t_off -= axes[d].dst * static_cast<std::ptrdiff_t>(axes[d].size);
        index[d] = 0;
      }
    }
  });
}

// x with its axes reordered into a new contiguous array: output axis i is input axis perm[i].
template <class T>
xt::xarray<T> permute_copy(const xt::xarray<T>& x, const std::vector<std::size_t>& perm) {
  const Shape in(x.shape().begin(), x.shape().end());
  const Strides in_strides = row_major_strides(in);
  Shape out_shape(perm.size());
  Strides src_strides(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) {
    out_shape[i] = in[perm[i]];
    src_strides[i] = in_strides[perm[i]];
  }
  xt::xarray<T> out = xt::xarray<T>::from_shape(out_shape);
  strided_copy(out_shape, x.data(), src_strides, out.data(), row_major_strides(out_shape));
  return out;
}

// The row-major array src of shape src_shape broadcast to out_shape (NumPy rule, one-sided:
// src_shape aligned from the right, its size-1 axes stretched; the caller has checked it fits).
template <class T>
xt::xarray<T> broadcast_copy(const T* src, const Shape& src_shape, const Shape& out_shape) {
  const std::size_t lead = out_shape.size() - src_shape.size();
  const Strides packed = row_major_strides(src_shape);
  Strides src_strides(out_shape.size(), 0);
  for (std::size_t d = 0; d < src_shape.size(); ++d) src_strides[lead + d] = src_shape[d] == 1 ? 0 : packed[d];
  xt::xarray<T> out = xt::xarray<T>::from_shape(out_shape);
  strided_copy(out_shape, src, src_strides, out.data(), row_major_strides(out_shape));
  return out;
}

}  // namespace tapegrad::kernels
