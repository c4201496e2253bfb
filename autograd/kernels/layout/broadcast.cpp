#include "autograd/kernels/layout/broadcast.h"

#include <algorithm>

#include <xtensor/xbuilder.hpp>

#include "autograd/base/checks.h"

namespace tapegrad::kernels {

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::size_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(std::string(op) + ": shapes " + format_shape(a) + " and " + format_shape(b) +
                       " do not broadcast (axis " + std::to_string(i) + " of the result: " + std::to_string(da) +
                       " vs " + std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  checked_numel(out, op, "the broadcast shape");
  return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const std::size_t lead = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[i + lead]) return false;
  return true;
}

std::vector<std::size_t> broadcast_strides(const Shape& shape, const Shape& out_shape) {
  const std::size_t nd = out_shape.size(), lead = nd - shape.size();
  std::vector<std::size_t> strides(nd, 0);
  std::size_t stride = 1;
  for (std::size_t d = nd; d-- > lead;) {
    const std::size_t size = shape[d - lead];
    strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  return strides;
}

template <class T>
xt::xarray<T> sum_to(const xt::xarray<T>& g, const Shape& shape) {
  const std::size_t nd = g.dimension();
  const std::size_t lead = nd - shape.size();
  if (lead == 0 && std::equal(shape.begin(), shape.end(), g.shape().begin())) return g;
  // out_stride[d]: how far one step along g's axis d moves in the output (0 on reduced axes).
  const std::vector<std::size_t> out_stride = broadcast_strides(shape, Shape(g.shape().begin(), g.shape().end()));
  xt::xarray<T> out = xt::zeros<T>(shape);
  if (g.size() == 0) return out;
  // One pass over g in row-major order with an odometer over its index; the innermost axis is
  // the hot loop. Each output element is summed in g's order: the same bits on every run.
  const std::size_t inner = g.shape()[nd - 1], inner_stride = out_stride[nd - 1];
  std::vector<std::size_t> index(nd, 0);
  std::size_t out_pos = 0;
  const T* src = g.data();
  T* dst = out.data();
  for (std::size_t done = 0; done < g.size(); done += inner) {
    for (std::size_t i = 0; i < inner; ++i) dst[out_pos + i * inner_stride] += src[done + i];
    for (std::size_t d = nd - 1; d-- > 0;) {
      out_pos += out_stride[d];
      if (++index[d] < g.shape()[d]) break;
      out_pos -= out_stride[d] * index[d];
      index[d] = 0;
    }
  }
  return out;
}

template xt::xarray<float> sum_to<float>(const xt::xarray<float>&, const Shape&);
template xt::xarray<double> sum_to<double>(const xt::xarray<double>&, const Shape&);

}  // namespace tapegrad::kernels
