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

// Elements of an array of this shape, unchecked (validation.h's checked_numel throws on overflow).
inline std::size_t shape_product(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) n *= s;
  return n;
}

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
}  // namespace tapegrad
