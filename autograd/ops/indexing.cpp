#include "autograd/ops/indexing.h"

#include <algorithm>
#include <string>
#include <vector>

#include "autograd/ops/detail/dims.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/indices.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/ops/shape.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// PyTorch compares ranks and sizes with a 0-d tensor read as [1].
Shape at_least_1d(const Shape& shape) { return shape.empty() ? Shape{1} : shape; }

Shape shape_of(const IndexArray& index) { return Shape(index.shape().begin(), index.shape().end()); }

std::vector<std::size_t> row_major_strides(const Shape& shape) {
  std::vector<std::size_t> strides(shape.size(), 1);
  for (std::size_t a = shape.size(); a-- > 1;) strides[a - 1] = strides[a] * shape[a];
  return strides;
}

// index.size(a) <= of.size(a) on every axis but `skip` (pass of.size() to skip none); same rank.
bool fits_in(const Shape& index, const Shape& of, std::size_t skip) {
  if (index.size() != of.size()) return false;
  for (std::size_t a = 0; a < index.size(); ++a)
    if (a != skip && index[a] > of[a]) return false;
  return true;
}

// ValueError at the first entry of index outside [0, size).
void check_entries(const char* op, const IndexArray& index, std::size_t size, Index dim, const std::string& target) {
  const Shape shape = shape_of(index);
  for (std::size_t k = 0; k < index.size(); ++k) {
    const Index i = index.data()[k];
    if (i < 0 || i >= static_cast<Index>(size)) {
      throw ValueError(std::string(op) + ": index " + std::to_string(i) + " at position " +
                       format_shape(kernels::unravel_index(k, shape)) + " of index " + format_shape(shape) +
                       " is out of range [0, " + std::to_string(size) + ") for dim " + std::to_string(dim) + " of " +
                       target);
    }
  }
}

// The walk over an index along dim. A column is one choice of every coordinate but dim's and
// holds index.size(dim) entries; the entries gather and scatter_add touch share the column's
// coordinates off dim, so different columns never touch the same output entry: columns run in
// parallel without races, each in index order (the same bits at any thread count).
struct Columns {
  Shape shape;  // the index's, at least 1-D
  std::size_t dim = 0;
  std::size_t count = 1;

  // The offset of column c's first entry in an array of the same rank with these strides.
  std::size_t offset(std::size_t c, const std::vector<std::size_t>& strides) const {
    std::size_t off = 0;
    for (std::size_t a = shape.size(); a-- > 0;) {
      if (a == dim) continue;
      off += (c % shape[a]) * strides[a];
      c /= shape[a];
    }
    return off;
  }

  // fn(column) for every column, in parallel chunks.
  template <class Fn> void for_each(Fn&& fn) const {
    kernels::parallel_items(count, shape[dim], [&](std::size_t begin, std::size_t end) {
      for (std::size_t c = begin; c < end; ++c) fn(c);
    });
  }
};

Columns columns_of(const Shape& index_shape, std::size_t dim) {
  Columns cols{at_least_1d(index_shape), dim, 1};
  for (std::size_t a = 0; a < cols.shape.size(); ++a)
    if (a != dim) cols.count *= cols.shape[a];
  return cols;
}

// scatter_add's gradient for src: g gathered back along dim, laid into zeros of src's shape
// (entries of src outside index's shape were never read).
template <class T>
Tensor<T> src_gradient(const Tensor<T>& g, std::size_t dim, const IndexArray& index, const Shape& src_shape) {
  if (index.size() == 0) return Tensor<T>::zeros(src_shape);
  Tensor<T> picked = gather(g, static_cast<Index>(dim), index);
  if (src_shape.empty() || picked.shape().empty()) return reshape(picked, detail::as_dims(src_shape));
  for (std::size_t a = 0; a < src_shape.size(); ++a) {
    if (picked.shape()[a] == src_shape[a]) continue;
    Shape rest = picked.shape();
    rest[a] = src_shape[a] - rest[a];
    picked = concat({picked, Tensor<T>::zeros(rest)}, static_cast<Index>(a));
  }
  return picked;
}

}  // namespace

template <class T>
Tensor<T> gather(const Tensor<T>& x, Index dim, const IndexArray& index, CallSite where) {
  require_defined(x, "gather", "x");
  const Shape xs = x.shape(), is = shape_of(index);
  const std::size_t d = normalize_axis(dim, std::max<std::size_t>(1, xs.size()), "gather", xs);
  xt::xarray<T> out = xt::xarray<T>::from_shape(allocatable(is, sizeof(T), "gather", "the output"));
  if (index.size() != 0) {
    const Shape x1 = at_least_1d(xs);
    if (!fits_in(at_least_1d(is), x1, d)) {
      throw ShapeError("gather: index " + format_shape(is) + " must have as many dims as the input " + format_shape(xs) +
                       " and be no larger than it along every axis but dim " + std::to_string(dim));
    }
    check_entries("gather", index, x1[d], dim, "the input " + format_shape(xs));
    const Columns cols = columns_of(is, d);
    const auto xstr = row_major_strides(x1), istr = row_major_strides(cols.shape);
    const T* xv = x.value().data();
    const Index* iv = index.data();
    T* o = out.data();
    cols.for_each([&](std::size_t c) {
      const std::size_t io = cols.offset(c, istr), xo = cols.offset(c, xstr);
      for (std::size_t k = 0, at = io; k < cols.shape[d]; ++k, at += istr[d])
        o[at] = xv[xo + static_cast<std::size_t>(iv[at]) * xstr[d]];
    });
  }
  return make_result("gather", where, std::move(out), should_record(x), [x = detail::edge(x), index, d](const Tensor<T>& g) {
    accumulate(x, scatter_add(Tensor<T>::zeros(x.shape()), static_cast<Index>(d), index, g));
  });
}

template <class T>
Tensor<T> scatter_add(const Tensor<T>& self, Index dim, const IndexArray& index, const Tensor<T>& src, CallSite where) {
  require_defined(self, "scatter_add", "self");
  require_defined(src, "scatter_add", "src");
  const Shape ss = self.shape(), is = shape_of(index), rs = src.shape();
  const std::size_t d = normalize_axis(dim, std::max<std::size_t>(1, ss.size()), "scatter_add", ss);
  xt::xarray<T> out = self.value();
  if (index.size() != 0) {
    const Shape s1 = at_least_1d(ss), i1 = at_least_1d(is), r1 = at_least_1d(rs);
    if (!fits_in(i1, s1, d) || !fits_in(i1, r1, i1.size())) {
      throw ShapeError("scatter_add: index " + format_shape(is) + " must have as many dims as self " + format_shape(ss) +
                       " and src " + format_shape(rs) + ", be no larger than src along every axis and no larger " +
                       "than self along every axis but dim " + std::to_string(dim));
    }
    check_entries("scatter_add", index, s1[d], dim, "self " + format_shape(ss));
    const Columns cols = columns_of(is, d);
    const auto sstr = row_major_strides(s1), istr = row_major_strides(i1), rstr = row_major_strides(r1);
    const T* rv = src.value().data();
    const Index* iv = index.data();
    T* o = out.data();
    cols.for_each([&](std::size_t c) {
      const std::size_t so = cols.offset(c, sstr), io = cols.offset(c, istr), ro = cols.offset(c, rstr);
      for (std::size_t k = 0; k < cols.shape[d]; ++k)
        o[so + static_cast<std::size_t>(iv[io + k * istr[d]]) * sstr[d]] += rv[ro + k * rstr[d]];
    });
  }
  return make_result("scatter_add", where, std::move(out), should_record(self, src),
                     [self = detail::edge(self), src = detail::edge(src), index, d](const Tensor<T>& g) {
                       if (self.requires_grad()) accumulate(self, g);
                       if (src.requires_grad()) accumulate(src, src_gradient(g, d, index, src.shape()));
                     });
}

template <class T>
Tensor<T> index_fill(const Tensor<T>& x, Index dim, const IndexArray& index, Scalar<T> value, CallSite where) {
  require_defined(x, "index_fill", "x");
  const Shape xs = x.shape();
  const std::size_t d = normalize_axis(dim, std::max<std::size_t>(1, xs.size()), "index_fill", xs);
  if (index.dimension() > 1) {
    throw ShapeError("index_fill: index must be 0-d or 1-D, got shape " + format_shape(index.shape()) +
                     " (input shape " + format_shape(xs) + ")");
  }
  const kernels::AxisLayout l = kernels::axis_layout(at_least_1d(xs), d);
  const auto n = static_cast<Index>(l.n);
  std::vector<char> filled(l.n, 0);
  for (std::size_t k = 0; k < index.size(); ++k) {
    const Index i = index.data()[k];
    if (i < -n || i >= n) {
      throw ValueError("index_fill: index " + std::to_string(i) + " at position " + std::to_string(k) +
                       " is out of range [-" + std::to_string(n) + ", " + std::to_string(n) + ") for dim " +
                       std::to_string(dim) + " of shape " + format_shape(xs));
    }
    filled[static_cast<std::size_t>(i < 0 ? i + n : i)] = 1;
  }
  xt::xarray<T> out = xt::xarray<T>::from_shape(xs);
  const T* xv = x.value().data();
  T* o = out.data();
  kernels::parallel_items(l.outer * l.n, l.inner, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      if (filled[r % l.n]) std::fill_n(o + r * l.inner, l.inner, value);
      else std::copy_n(xv + r * l.inner, l.inner, o + r * l.inner);
    }
  });
  return make_result("index_fill", where, std::move(out), should_record(x, value),
                     [x = detail::edge(x), index, d](const Tensor<T>& g) {
                       accumulate(x, index_fill(g, static_cast<Index>(d), index, T(0)));
                     });
}

#define TAPEGRAD_INSTANTIATE_INDEXING(T)                                                                 \
  template Tensor<T> gather(const Tensor<T>&, Index, const IndexArray&, CallSite);                      \
  template Tensor<T> scatter_add(const Tensor<T>&, Index, const IndexArray&, const Tensor<T>&, CallSite); \
  template Tensor<T> index_fill(const Tensor<T>&, Index, const IndexArray&, Scalar<T>, CallSite);
TAPEGRAD_INSTANTIATE_INDEXING(float)
TAPEGRAD_INSTANTIATE_INDEXING(double)

}  // namespace tapegrad
