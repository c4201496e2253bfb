#pragma once
// A shape as the signed sizes reshape, view and expand take: how an op's backward turns a saved
// shape back into their arguments.
#include <vector>

#include "autograd/base/shape.h"

namespace tapegrad::detail {

inline std::vector<Index> as_dims(const Shape& shape) { return std::vector<Index>(shape.begin(), shape.end()); }

}  // namespace tapegrad::detail
