#include "autograd/ops/argmax.h"

#include <algorithm>
#include <string>

#include "autograd/base/checks.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"

namespace tapegrad {

namespace {

// The checks name argmax / argmin (max and min along a dim would name themselves), then
// max / min along a dim of the detached x picks the position.
template <class T>
IndexArray arg_extreme(const char* op, bool largest, const Tensor<T>& x, std::optional<Index> dim, bool keepdim) {
  require_defined(x, op, "x");
  const Shape& shape = x.shape();
  const CallSite here = std::source_location::current();
  if (!dim) {
    if (x.numel() == 0) {
      throw ValueError(std::string(op) + ": x " + format_shape(shape) +
                       " has zero elements, so there is no position to return; give a dim");
    }
    IndexArray flat = detail::extreme_along(largest, reshape(x.detach(), {-1}), 0, false, here).indices;
    if (keepdim) flat.reshape(std::vector<std::size_t>(shape.size(), 1));
    return flat;
  }
  const std::size_t d = normalize_axis(*dim, std::max<std::size_t>(1, shape.size()), op, shape);
  if (!shape.empty() && shape[d] == 0) {
    throw ValueError(std::string(op) + ": axis " + std::to_string(*dim) + " of x " + format_shape(shape) +
                     " has size 0, so there is no position to return");
  }
  return detail::extreme_along(largest, x.detach(), *dim, keepdim, here).indices;
}

}  // namespace

template <class T> IndexArray argmax(const Tensor<T>& x, std::optional<Index> dim, bool keepdim) {
  return arg_extreme("argmax", true, x, dim, keepdim);
}

template <class T> IndexArray argmin(const Tensor<T>& x, std::optional<Index> dim, bool keepdim) {
  return arg_extreme("argmin", false, x, dim, keepdim);
}

#define TAPEGRAD_INSTANTIATE_ARGMAX(T)                                        \
  template IndexArray argmax(const Tensor<T>&, std::optional<Index>, bool); \
  template IndexArray argmin(const Tensor<T>&, std::optional<Index>, bool);
TAPEGRAD_INSTANTIATE_ARGMAX(float)
TAPEGRAD_INSTANTIATE_ARGMAX(double)

}  // namespace tapegrad
