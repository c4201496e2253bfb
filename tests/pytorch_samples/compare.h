#pragma once
// Element-wise comparison of tapegrad's result with PyTorch's in float64.
#include <optional>
#include <string>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

namespace tapegrad::pytorch_samples {

// Allowed |got - want| per element, relative to the larger of |got|, |want| and the tensor's
// largest finite |want|. The last term matters where an element cancels to far below its terms:
// tanh's gradient g * (1 - y^2) with y within an ulp of 1 differs by 1e-9 of itself between two
// correct tanh implementations one ulp apart (the ASan build's and PyTorch's), though it matches
// to 1e-16 of the tensor. NaN matches NaN; infinities match exactly.
inline constexpr double relative_tolerance = 1e-10;

// Null when got matches want; otherwise the shape mismatch or the first element that differs,
// with both values and its flat index.
std::optional<std::string> mismatch(const xt::xarray<double>& got, const xt::xarray<double>& want);

}  // namespace tapegrad::pytorch_samples
