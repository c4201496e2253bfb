#pragma once
// pow for batches and scalars alike (the pointwise table's pow rows), with the IEEE answers (those
// of std::pow and PyTorch) where xsimd 8's pow departs from them: pow(x, 0) is 1 for every x
// (xsimd gives 0 at x = 0); pow(±0, y < 0) is infinite, negative only for -0 and an odd integer y
// (xsimd gives 0); a negative base to a power too large to be odd gives a positive result (xsimd
// decides oddness after rounding y - 1, so pow(-501, 1e20) came out -inf).
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "autograd/kernels/map.h"

namespace tapegrad::kernels {

namespace detail {
template <class V> struct ElementOf { using type = typename V::value_type; };  // a batch
template <class V> requires std::is_arithmetic_v<V> struct ElementOf<V> { using type = V; };
}  // namespace detail

template <class V>
V ieee_pow(V a, V b) {
  using T = typename detail::ElementOf<V>::type;
  // Every float of at least 2^(digits) is an even integer.
  constexpr T all_even = T(2) / std::numeric_limits<T>::epsilon();
  const V r = xsimd::pow(a, b);
  const auto beyond_odd = xsimd::abs(b) >= V(all_even);
  const auto below_even = xsimd::abs(b) < V(all_even);
  const auto odd = below_even & (b - V(2) * xsimd::floor(b * V(0.5)) == V(1));
  const V pole = simd::select(odd, V(xsimd::copysign(V(std::numeric_limits<T>::infinity()), a)),
                              V(std::numeric_limits<T>::infinity()));
  V fixed = simd::select(beyond_odd, V(xsimd::abs(r)), r);
  fixed = simd::select((a == V(0)) & (b < V(0)), pole, fixed);
  return simd::select(b == V(0), V(1), fixed);
}

}  // namespace tapegrad::kernels
