#pragma once
// Index arithmetic for ops that report a bad element by its position (embedding indices, loss
// targets): messages say "at position [1,2]" rather than a flat offset.
#include <cstddef>

#include "autograd/base/errors.h"

namespace tapegrad::kernels {

// The multi-index of element `flat` in a row-major array of `shape`: 5 in [2,3] is [1,2];
// a 0-d shape gives [].
inline Shape unravel_index(std::size_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return index;
}

}  // namespace tapegrad::kernels
