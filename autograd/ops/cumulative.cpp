#include "autograd/ops/cumulative.h"

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/simd/row_kernels.h"

namespace tapegrad {

namespace {

// The running sum along `axis`, from the front or (reverse) from the back: cumsum's forward is the
// one, its backward the other, and each is the other's derivative.
template <class T>
Tensor<T> running_sum(const Tensor<T>& a, Index dim, bool reverse, CallSite where) {
  require_defined(a, "cumsum", "a");
  const Shape shape = a.shape();
  const bool scalar = is_scalar_axis(dim, shape, "cumsum");
  const std::size_t axis = scalar ? 0 : normalize_axis(dim, shape.size(), "cumsum", shape);
  const kernels::AxisLayout l = kernels::axis_layout(scalar ? Shape{1} : shape, axis);
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  const T* x = a.value().data();
  T* y = out.data();
  kernels::for_each_lane_block(l, [&](std::size_t offset, auto stride, auto width) {
    double acc[kernels::kLaneBlock] = {};
    for (std::size_t step = 0; step < l.n; ++step) {
      const std::size_t k = reverse ? l.n - 1 - step : step;
      for (std::size_t j = 0; j < width; ++j) {
        const std::size_t i = offset + k * stride + j;
        acc[j] += static_cast<double>(x[i]);
        y[i] = static_cast<T>(acc[j]);
      }
    }
  });
  return detail::make_result(reverse ? "reverse_cumsum" : "cumsum", where, std::move(out), detail::should_record(a),
                             [a = detail::edge(a), dim, reverse](const Tensor<T>& g) {
                               detail::accumulate(a, running_sum(g, dim, !reverse, std::source_location::current()));
                             });
}

}  // namespace

template <class T>
Tensor<T> cumsum(const Tensor<T>& a, Index dim, CallSite where) {
  return running_sum(a, dim, false, where);
}

template Tensor<float> cumsum(const Tensor<float>&, Index, CallSite);
template Tensor<double> cumsum(const Tensor<double>&, Index, CallSite);

}  // namespace tapegrad
