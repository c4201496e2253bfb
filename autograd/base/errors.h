#pragma once
// The exceptions every user-facing check throws. Messages name the op, the argument and the shapes,
// e.g. `einsum("ibhd,jbhd->ijbh"): operand 1 has 3 dims [5,3,2] but its subscripts "jbhd" need 4`.
#include <stdexcept>

#include "autograd/base/shape.h"

namespace tapegrad {

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

// Anomaly mode (autograd/core/anomaly.h) found a NaN or an infinity an op produced, forward or backward.
class AnomalyError : public Error {
 public:
  using Error::Error;
};

}  // namespace tapegrad
