#pragma once
// Element-wise comparison of tapegrad's result with PyTorch's in float64.
#include <optional>
#include <string>

#include <xtensor/xarray.hpp>

namespace tapegrad::pytorch_samples {

// Allowed |got - want| per element, relative to the larger of |got| and |want|, with no absolute
// floor: a zero must be an exact zero. (Every sample that passes today passes this; a sum that
// cancels to near zero and so differs more goes to differences.txt with its reason.) NaN
// matches NaN; infinities match exactly.
inline constexpr double relative_tolerance = 1e-10;

// Null when got matches want; otherwise the shape mismatch or the first element that differs,
// with both values and its flat index.
std::optional<std::string> mismatch(const xt::xarray<double>& got, const xt::xarray<double>& want);

}  // namespace tapegrad::pytorch_samples
