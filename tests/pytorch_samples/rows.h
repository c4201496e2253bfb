#pragma once
// What the PyTorch calls of the op specs (tests/ops/op_spec.h) and of dispatch.cpp read from a
// sample's arguments, beyond Call's conversions.
#include <string>

#include "call.h"

namespace tapegrad::pytorch_samples {

// Throws Unsupported: the sample needs `what`, which tapegrad lacks.
[[noreturn]] void lacks(const std::string& what);

// The dim argument: positional at `position`, else the dim= keyword, else `fallback`.
Index dim_arg(Call& c, std::size_t position, Index fallback);

// Unsupported unless the dtype= keyword, when given, is float64 (the samples' own dtype).
void require_float64(Call& c);

}  // namespace tapegrad::pytorch_samples
