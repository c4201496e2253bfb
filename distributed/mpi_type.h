#pragma once
// The MPI datatype of a tensor element type (float or double), and element counts as MPI takes them.
#include <climits>
#include <cstddef>
#include <string>
#include <type_traits>

#include <mpi.h>

#include "autograd/base/errors.h"

namespace tapegrad::distributed {

template <class T>
MPI_Datatype mpi_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "tensors hold float or double");
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

// MPI counts are ints: a larger count would wrap around. ValueError naming `what` (the caller and
// the tensor) beyond INT_MAX elements.
inline int mpi_count(std::size_t n, const std::string& what) {
  if (n > static_cast<std::size_t>(INT_MAX)) {
    throw ValueError(what + " has " + std::to_string(n) + " elements, more than one MPI call can carry (" +
                     std::to_string(INT_MAX) + ")");
  }
  return static_cast<int>(n);
}

}  // namespace tapegrad::distributed
