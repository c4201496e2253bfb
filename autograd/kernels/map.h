#pragma once
// The one parallel elementwise map: out[i] = f(a[i]) or f(a[i], b[i]) over contiguous arrays of n
// elements (out may be a or b: each element is read before it is written).
//
// f is a generic lambda. When it accepts xsimd batches it is called on whole batches and then on
// scalars for the tail (xsimd's math functions, xsimd::exp and the rest, take both, as does
// simd::select below); otherwise on scalars only. Work is split into fixed blocks of whole
// batches, so which elements take the scalar path depends on n alone, never on the thread count:
// the bits are the same at any thread count.
#include <concepts>
#include <cstddef>

#include <xsimd/xsimd.hpp>

#include "autograd/kernels/row_kernels.h"
#include "autograd/kernels/simd_span.h"

namespace tapegrad::kernels {

namespace simd {
// xsimd::select, and the same for a scalar, so that one formula serves batches and tails.
using xsimd::select;
template <class T>
T select(bool condition, T if_true, T if_false) {
  return condition ? if_true : if_false;
}
}  // namespace simd

namespace detail {
// Elements per parallel block: a multiple of every batch width.
inline constexpr std::size_t kMapBlock = kTaskElements;

template <class T, class F, class... In>
void map_blocks(std::size_t n, T* out, F& f, const In*... in) {
  using Batch = simd::Batch<T>;
  constexpr std::size_t width = Batch::size;
  static_assert(kMapBlock % width == 0);
  constexpr bool vectorised = std::invocable<F&, decltype(Batch::load_unaligned(in))...>;
  const std::size_t blocks = (n + kMapBlock - 1) / kMapBlock;
  parallel_items(blocks, kMapBlock, [&](std::size_t first, std::size_t last) {
    const std::size_t end = std::min(n, last * kMapBlock);
    std::size_t i = first * kMapBlock;
    if constexpr (vectorised) {
      for (; i + width <= end; i += width) f(Batch::load_unaligned(in + i)...).store_unaligned(out + i);
    }
    for (; i < end; ++i) out[i] = f(in[i]...);
  });
}
}  // namespace detail

// out[i] = f(a[i]) for i < n.
template <class T, class F>
void map(std::size_t n, const T* a, T* out, F f) {
  detail::map_blocks(n, out, f, a);
}

// out[i] = f(a[i], b[i]) for i < n.
template <class T, class F>
void map(std::size_t n, const T* a, const T* b, T* out, F f) {
  detail::map_blocks(n, out, f, a, b);
}

}  // namespace tapegrad::kernels
