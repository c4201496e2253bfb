#include <xtensor/xoperation.hpp>

#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/simd/strided_copy.h"
#include "autograd/ops/masking.h"

namespace tapegrad {

AttendMask::AttendMask(const xt::xarray<std::uint8_t>& may_attend)
    : may_attend_(xt::not_equal(may_attend, std::uint8_t{0})) {}

AttendMask AttendMask::blocking(const Mask& blocked) { return AttendMask(Mask(!blocked)); }

Mask AttendMask::blocked() const { return !may_attend_; }

AttendMask operator&&(const AttendMask& a, const AttendMask& b) {
  const Mask& x = a.may_attend();
  const Mask& y = b.may_attend();
  const Shape x_shape(x.shape().begin(), x.shape().end()), y_shape(y.shape().begin(), y.shape().end());
  // xtensor's own broadcast error names neither shape: check first.
  const Shape shape = kernels::broadcast_shapes(x_shape, y_shape, "AttendMask && AttendMask");
  // Both broadcast to the result first, then combined element by element: xtensor 0.24's `&&` of
  // two bool arrays of different shapes gives wrong cells (e.g. [2,1,16] && [16,16]).
  const Mask x_full = kernels::broadcast_copy(x.data(), x_shape, shape);
  const Mask y_full = kernels::broadcast_copy(y.data(), y_shape, shape);
  Mask both = Mask::from_shape(shape);
  for (std::size_t i = 0; i < both.size(); ++i) both.data()[i] = x_full.data()[i] && y_full.data()[i];
  return AttendMask(std::move(both));
}

}  // namespace tapegrad
