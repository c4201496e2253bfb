#include "autograd/ops/cumulative.h"

#include <algorithm>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/ops/pointwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"

namespace tapegrad {

namespace {

// The running combination of a's elements along dim, from the front or (reverse) from the back,
// each lane accumulated in double from `init` in index order by one thread.
template <class T, class Combine>
xt::xarray<T> scan(const Tensor<T>& a, Index dim, bool reverse, double init, Combine combine, const char* op) {
  require_defined(a, op, "a");
  const Shape shape = a.shape();
  const bool scalar = is_scalar_axis(dim, shape, op);
  const std::size_t axis = scalar ? 0 : normalize_axis(dim, shape.size(), op, shape);
  const kernels::AxisLayout l = kernels::axis_layout(scalar ? Shape{1} : shape, axis);
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  const T* x = a.value().data();
  T* y = out.data();
  kernels::for_each_lane_block(l, [&](std::size_t offset, auto stride, auto width) {
    double acc[kernels::kLaneBlock];
    std::fill(acc, acc + kernels::kLaneBlock, init);
    for (std::size_t step = 0; step < l.n; ++step) {
      const std::size_t k = reverse ? l.n - 1 - step : step;
      for (std::size_t j = 0; j < width; ++j) {
        const std::size_t i = offset + k * stride + j;
        acc[j] = combine(acc[j], static_cast<double>(x[i]));
        y[i] = static_cast<T>(acc[j]);
      }
    }
  });
  return out;
}

// The running sum along dim, from the front or (reverse) from the back: cumsum's forward is the
// one, its backward the other, and each is the other's derivative.
template <class T>
Tensor<T> running_sum(const Tensor<T>& a, Index dim, bool reverse, CallSite where) {
  xt::xarray<T> out = scan(a, dim, reverse, 0.0, [](double acc, double x) { return acc + x; }, "cumsum");
  return detail::make_result(reverse ? "reverse_cumsum" : "cumsum", where, std::move(out), detail::should_record(a),
                             [a = detail::edge(a), dim, reverse](const Tensor<T>& g) {
                               detail::accumulate(a, running_sum(g, dim, !reverse, std::source_location::current()));
                             });
}

// dL/da[k] = sum_{i >= k} g[i] prod_{j <= i, j != k} a[j] for a with a zero along dim: for each
// k, the products that omit a[k] are y[k - 1] (1 at k = 0) times the running product of a after
// k, so a zero at k does not zero its own gradient.
template <class T>
Tensor<T> cumprod_gradient_with_zeros(const Tensor<T>& g, const Tensor<T>& a, const Tensor<T>& y, std::size_t axis) {
  const Index d = static_cast<Index>(axis), n = static_cast<Index>(a.shape()[axis]);
  Shape one_step = a.shape();
  one_step[axis] = 1;
  const Tensor<T> ones = Tensor<T>::ones(one_step);
  std::vector<Tensor<T>> pieces;
  for (Index k = 0; k < n; ++k) {
    std::vector<Tensor<T>> omitted{ones};
    if (k + 1 < n) omitted.push_back(cumprod(narrow(a, d, k + 1, n - k - 1), d));
    Tensor<T> products = concat(omitted, d);
    if (k > 0) products = mul(products, narrow(y, d, k - 1, 1));
    pieces.push_back(sum(mul(narrow(g, d, k, n - k), products), {d}, true));
  }
  return concat(pieces, d);
}

template <class T>
Tensor<T> cumprod_gradient(const Tensor<T>& g, const Tensor<T>& a, const Tensor<T>& y, Index dim) {
  const Shape& shape = a.shape();
  if (shape.empty() || a.numel() == 0) return g;  // y = a
  const std::size_t axis = normalize_axis(dim, shape.size(), "cumprod", shape);
  const auto& x = a.value();
  if (std::find(x.begin(), x.end(), T(0)) == x.end()) return div(running_sum(mul(g, y), dim, true, std::source_location::current()), a);
  return cumprod_gradient_with_zeros(g, a, y, axis);
}

}  // namespace

template <class T>
Tensor<T> cumsum(const Tensor<T>& a, Index dim, CallSite where) {
  return running_sum(a, dim, false, where);
}

template <class T>
Tensor<T> cumprod(const Tensor<T>& a, Index dim, CallSite where) {
  xt::xarray<T> out = scan(a, dim, false, 1.0, [](double acc, double x) { return acc * x; }, "cumprod");
  return detail::make_result("cumprod", where, std::move(out), detail::should_record(a),
                             [a, dim](const Tensor<T>& g, const Tensor<T>& y) {
                               detail::accumulate(a, cumprod_gradient(g, a, y, dim));
                             });
}

template Tensor<float> cumsum(const Tensor<float>&, Index, CallSite);
template Tensor<double> cumsum(const Tensor<double>&, Index, CallSite);
template Tensor<float> cumprod(const Tensor<float>&, Index, CallSite);
template Tensor<double> cumprod(const Tensor<double>&, Index, CallSite);

}  // namespace tapegrad
