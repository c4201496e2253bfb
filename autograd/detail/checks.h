#pragma once
// Helpers of the ops' own (the checks shared with every layer are public: autograd/validation.h).
#include <vector>

#include "autograd/tensor.h"
#include "autograd/validation.h"

namespace tapegrad::detail {

// A shape as the signed sizes reshape, view and expand take.
inline std::vector<Index> as_dims(const Shape& shape) { return std::vector<Index>(shape.begin(), shape.end()); }

}  // namespace tapegrad::detail
