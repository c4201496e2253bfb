#pragma once
// Forward formulas of pointwise rows (autograd/ops/pointwise_table.h) too long to write in a row.
// Each takes two T or two xsimd batches of T (kernels/simd/map.h calls them on both), as PyTorch 1.13
// computes them on the CPU.
#include <cmath>
#include <concepts>
#include <cstddef>

#include <xsimd/xsimd.hpp>

#include "autograd/kernels/simd/map.h"

namespace tapegrad::kernels {

// The larger of a and b; NaN if either is NaN; a at a tie (so maximum(-0., 0.) is -0.). NaN is
// found by xsimd::isnan: xsimd 8's batch `b != b` is an ordered compare, false for NaN.
template <class V> V maximum(V a, V b) { return simd::select((b > a) | xsimd::isnan(b), b, a); }
// The smaller of a and b; NaN if either is NaN; a at a tie.
template <class V> V minimum(V a, V b) { return simd::select((b < a) | xsimd::isnan(b), b, a); }

// a / b rounded toward -inf, as Python's a // b and PyTorch: from fmod rather than floor(a / b), so
// that the rounding of a / b cannot cross an integer (1.0 // 0.1 is 9, floor(1.0 / 0.1) is 10). A
// zero result keeps the sign of a / b; b == 0 gives a / b (inf or NaN).
template <std::floating_point T> T floor_divide(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  // fmod takes a's sign; the floored quotient is one lower when the remainder has the other sign.
  if (mod != T(0) && (b < T(0)) != (mod < T(0))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), a / b);
  const T floored = std::floor(div);
  return div - floored > T(0.5) ? floored + T(1) : floored;  // div was just below an integer
}
// On a batch, element by element: xsimd's fmod is a - trunc(a / b) * b, whose rounding can move
// the quotient by one (it gives 10 for 1.0 // 0.1).
template <class T, class A> xsimd::batch<T, A> floor_divide(const xsimd::batch<T, A>& a, const xsimd::batch<T, A>& b) {
  return simd::lane_by_lane(a, b, [](T x, T y) { return floor_divide(x, y); });
}

}  // namespace tapegrad::kernels
