#include <xtensor/xoperation.hpp>

#include "autograd/kernels/broadcast.h"
#include "autograd/ops/masking.h"

namespace tapegrad {

AttendMask::AttendMask(const xt::xarray<std::uint8_t>& may_attend)
    : may_attend_(xt::not_equal(may_attend, std::uint8_t{0})) {}

AttendMask AttendMask::blocking(const Mask& blocked) { return AttendMask(Mask(!blocked)); }

Mask AttendMask::blocked() const { return !may_attend_; }

AttendMask operator&&(const AttendMask& a, const AttendMask& b) {
  const Mask& x = a.may_attend();
  const Mask& y = b.may_attend();
  // xtensor's own broadcast error names neither shape: check first.
  kernels::broadcast_shapes(Shape(x.shape().begin(), x.shape().end()), Shape(y.shape().begin(), y.shape().end()),
                            "AttendMask && AttendMask");
  return AttendMask(Mask(x && y));
}

}  // namespace tapegrad
