#include "autograd/ops/statistics.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include <xtensor/xoperation.hpp>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/masking.h"
#include "autograd/ops/shape.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// The groups a reduction over `axes` forms: the input's shape with reduced axes set to 1 (the
// result with keepdims, to which the backward reshapes g), the result's shape, the group size.
struct Groups {
  std::vector<Index> kept;
  std::vector<Index> out;
  std::size_t n = 1;
};

Groups groups_of(const char* op, const Shape& shape, const Axes& axes, bool keepdims) {
  const std::vector<bool> reduced = detail::axes_mask(op, shape, axes);
  Groups groups;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    groups.kept.push_back(reduced[d] ? 1 : Index(shape[d]));
    if (reduced[d]) groups.n *= shape[d];
    if (!reduced[d] || keepdims) groups.out.push_back(groups.kept.back());
  }
  return groups;
}

Axes every_axis(const Shape& shape) {
  Axes axes(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) axes[d] = Index(d);
  return axes;
}

// The two-pass variance of each group (the forward of var and std, on values: nothing recorded)
// and var's backward, shared by std's.
template <class T>
xt::xarray<T> variance(const Tensor<T>& a, const Axes& axes, const Groups& groups, Index correction) {
  const Tensor<T> x = a.detach();
  const Tensor<T> centred = sub(x, mean(x, axes, true));
  const Tensor<T> squares = sum(mul(centred, centred), axes, true);
  // PyTorch divides by max(0, n - correction): n <= correction gives 0/0 = NaN or s/0 = inf.
  const T divisor = static_cast<T>(std::max<double>(0.0, double(groups.n) - double(correction)));
  xt::xarray<T> v = squares.value() / divisor;
  v.reshape(std::vector<std::size_t>(groups.out.begin(), groups.out.end()));
  return v;
}

// g_var (of var's output shape) 2 (x - mean) / (n - correction): PyTorch's var_backward, whose
// divisor is not clamped.
template <class T>
Tensor<T> variance_backward(const Tensor<T>& g_var, const Tensor<T>& a, const Axes& axes, const Groups& groups,
                            Index correction) {
  const Tensor<T> centred = sub(a, mean(a, axes, true));
  const T scale = static_cast<T>(2.0 / (double(groups.n) - double(correction)));
  return mul(mul(reshape(g_var, groups.kept), centred), scale);
}

void require_correction(const char* op, Index correction, const Shape& shape) {
  if (correction < 0) {
    throw ValueError(std::string(op) + ": correction must be >= 0, got " + std::to_string(correction) + " (input " +
                     format_shape(shape) + ")");
  }
}

}  // namespace

template <class T>
Tensor<T> logsumexp(const Tensor<T>& a, const Axes& axes, bool keepdims, CallSite where) {
  require_defined(a, "logsumexp", "a");
  const Groups groups = groups_of("logsumexp", a.shape(), axes, keepdims);
  const Tensor<T> x = a.detach();
  // The shift: each group's maximum, or 0 when it is infinite (or the group empty), as PyTorch.
  xt::xarray<T> shift = groups.n == 0 ? xt::xarray<T>(xt::zeros<T>(std::vector<std::size_t>(groups.kept.begin(), groups.kept.end())))
                                      : max(x, axes, true).value();
  shift = xt::where(xt::isinf(shift), T(0), shift);
  const Tensor<T> m(std::move(shift));
  xt::xarray<T> y = add(log(sum(exp(sub(x, m)), axes, true)), m).value();
  y.reshape(std::vector<std::size_t>(groups.out.begin(), groups.out.end()));
  return make_result("logsumexp", where, std::move(y), should_record(a),
                     [a, kept = groups.kept](const Tensor<T>& g, const Tensor<T>& y) {
                       // d/dx = exp(x - y): the softmax of the group.
                       accumulate(a, mul(reshape(g, kept), exp(sub(a, reshape(y, kept)))));
                     });
}

template <class T>
Tensor<T> var(const Tensor<T>& a, CallSite where) {
  require_defined(a, "var", "a");
  return var(a, every_axis(a.shape()), 1, false, where);
}

template <class T>
Tensor<T> var(const Tensor<T>& a, const Axes& axes, Index correction, bool keepdims, CallSite where) {
  require_defined(a, "var", "a");
  require_correction("var", correction, a.shape());
  const Groups groups = groups_of("var", a.shape(), axes, keepdims);
  return make_result("var", where, variance(a, axes, groups, correction), should_record(a),
                     [a, axes, groups, correction](const Tensor<T>& g) {
                       accumulate(a, variance_backward(g, a, axes, groups, correction));
                     });
}

template <class T>
Tensor<T> std(const Tensor<T>& a, CallSite where) {
  require_defined(a, "std", "a");
  return std(a, every_axis(a.shape()), 1, false, where);
}

template <class T>
Tensor<T> std(const Tensor<T>& a, const Axes& axes, Index correction, bool keepdims, CallSite where) {
  require_defined(a, "std", "a");
  require_correction("std", correction, a.shape());
  const Groups groups = groups_of("std", a.shape(), axes, keepdims);
  xt::xarray<T> y = xt::sqrt(variance(a, axes, groups, correction));
  return make_result("std", where, std::move(y), should_record(a),
                     [a, axes, groups, correction](const Tensor<T>& g, const Tensor<T>& y) {
                       // d std = d var / (2 std), 0 where std is 0 (PyTorch's std_backward).
                       const Mask zero = xt::equal(y.value(), T(0));
                       const Tensor<T> g_var = masked_fill(div(g, mul(y, T(2))), zero, T(0));
                       accumulate(a, variance_backward(g_var, a, axes, groups, correction));
                     });
}

#define TAPEGRAD_INSTANTIATE_STATISTICS(T)                                                       \
  template Tensor<T> logsumexp(const Tensor<T>&, const Axes&, bool, CallSite);                  \
  template Tensor<T> var(const Tensor<T>&, CallSite);                                           \
  template Tensor<T> var(const Tensor<T>&, const Axes&, Index, bool, CallSite);                 \
  template Tensor<T> std(const Tensor<T>&, CallSite);                                           \
  template Tensor<T> std(const Tensor<T>&, const Axes&, Index, bool, CallSite);
TAPEGRAD_INSTANTIATE_STATISTICS(float)
TAPEGRAD_INSTANTIATE_STATISTICS(double)

}  // namespace tapegrad
