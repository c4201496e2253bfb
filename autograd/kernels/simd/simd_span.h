#pragma once
// xsimd loops over one contiguous span [p, p + n): the vectorised hot passes of the row kernels
// (exp is most of softmax's cost, and a scalar sum or max is latency-bound).
// Each loop runs whole batches, then the rest. The split depends only on n, so results are
// the same on every run and at any thread count; sums are accumulated per batch lane, so their
// last bits differ from a sequential loop's.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "autograd/kernels/simd/libm_expf.h"

namespace tapegrad::kernels::simd {

template <class T>
using Batch = xsimd::batch<T>;

// p[i] = exp(p[i]); exp(-inf) is exactly 0. Whole batches through xsimd::exp, the rest with
// std::exp's bits (for floats in vectors too: libm_expf.h).
template <class T>
void exp_inplace(T* p, std::size_t n) {
  constexpr std::size_t width = Batch<T>::size;
  std::size_t i = 0;
  for (; i + width <= n; i += width) xsimd::exp(Batch<T>::load_unaligned(p + i)).store_unaligned(p + i);
  if constexpr (std::is_same_v<T, float>) {
    libm_expf_inplace(p + i, n - i);
  } else {
    for (; i < n; ++i) p[i] = std::exp(p[i]);
  }
}

// exp_inplace over each of `rows` rows of n at p, one after the other: the same bits. Rows shorter
// than a batch are all std::exp's bits, so for floats they go through libm_expf_inplace as one
// span, whole vectors across rows (on AVX-512, 6.4x as fast as std::exp on rows of 10, 5.3x as
// fast as a call per row).
template <class T>
void exp_rows_inplace(T* p, std::size_t rows, std::size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (n < Batch<T>::size) {
      libm_expf_inplace(p, rows * n);
      return;
    }
  }
  for (std::size_t r = 0; r < rows; ++r) exp_inplace(p + r * n, n);
}

// sum_{i < n} term(at_i), where at_i(p) reads p[i]: term is a generic lambda called with batches
// (at_i loads Batch<T>::size elements from p + i) and then, for the tail, with scalars, e.g.
//   sum_of<T>(n, [&](auto at) { auto d = at(x) - mean; return d * d; })
template <class T, class Term>
T sum_of(std::size_t n, Term&& term) {
  constexpr std::size_t width = Batch<T>::size;
  Batch<T> acc(T(0));
  std::size_t i = 0;
  for (; i + width <= n; i += width) acc += term([i](const T* p) { return Batch<T>::load_unaligned(p + i); });
  T s = xsimd::hadd(acc);
  for (; i < n; ++i) s += term([i](const T* p) { return p[i]; });
  return s;
}

template <class T>
T sum(const T* p, std::size_t n) {
  return sum_of<T>(n, [p](auto at) { return at(p); });
}

// The maximum, -inf for n == 0. NaN entries are not propagated (as std::max): callers that care
// see them again in a later pass.
template <class T>
T max(const T* p, std::size_t n) {
  constexpr std::size_t width = Batch<T>::size;
  constexpr T lowest = -std::numeric_limits<T>::infinity();
  Batch<T> acc(lowest);
  std::size_t i = 0;
  for (; i + width <= n; i += width) acc = xsimd::max(acc, Batch<T>::load_unaligned(p + i));
  T lanes[width];
  acc.store_unaligned(lanes);
  T m = lowest;
  for (std::size_t l = 0; l < width; ++l) m = std::max(m, lanes[l]);
  for (; i < n; ++i) m = std::max(m, p[i]);
  return m;
}

}  // namespace tapegrad::kernels::simd
