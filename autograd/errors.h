#pragma once
// The exceptions every user-facing check throws. Messages name the op, the argument and the shapes,
// e.g. `einsum("ibhd,jbhd->ijbh"): operand 1 has 3 dims [5,3,2] but its subscripts "jbhd" need 4`.
#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <string>
#include <vector>

namespace tapegrad {

using Shape = std::vector<std::size_t>;

// Base of every tapegrad error, so `catch (const tapegrad::Error&)` catches them all.
class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Shapes that do not fit together: wrong rank, non-broadcastable, mismatched sizes.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A bad value: an axis or index out of range, a probability outside [0, 1), a malformed string.
class ValueError : public Error {
 public:
  using Error::Error;
};

// Misuse of the gradient tape: backward twice on a non-persistent tape, no gradient to read, ...
class TapeError : public Error {
 public:
  using Error::Error;
};

// Anomaly mode (autograd/anomaly.h) found a NaN or an infinity an op produced, forward or backward.
class AnomalyError : public Error {
 public:
  using Error::Error;
};

// "[2,3,4]" — the one way shapes are printed in messages.
std::string format_shape(const Shape& shape);

template <class ShapeLike>
std::string format_shape(const ShapeLike& shape) {
  return format_shape(Shape(shape.begin(), shape.end()));
}

namespace detail {

// The one overflow-checked shape product: every shape an op makes (a reshape target, an output,
// a workspace) goes through it or through allocatable, so no size wraps around. Returns the
// element count; ValueError naming op, `what` (the argument or result the shape belongs to) and
// the shape when the product of its non-zero sizes passes 2^63 (a negative size converted to
// size_t is the usual cause). A shape that passes has every partial product in range too.
std::size_t checked_numel(const Shape& shape, std::string_view op, std::string_view what = "shape");

// shape itself, or ValueError naming op, `what`, the shape and the bytes it needs when its
// elements (of element_size bytes) cannot fit in this machine's memory (RAM + swap, or ulimit -v):
// "matmul: the output [1048576,1048576] needs 8 TiB, more than can fit in memory (...)".
// Why a check where the shape is made, and not a catch of std::bad_alloc: the allocations happen
// in many places (outputs, workspaces, backward buffers, xtensor expressions), and a bad_alloc
// caught afterwards no longer knows which op or shape asked; an allocation that the check lets
// through can still fail (memory in use elsewhere), but not one that could never succeed. An
// output shaped like an input needs no check: that shape was checked when its tensor was made.
const Shape& allocatable(const Shape& shape, std::size_t element_size, std::string_view op,
                         std::string_view what = "shape");

}  // namespace detail

}  // namespace tapegrad
