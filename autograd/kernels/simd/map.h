#pragma once
// The one parallel elementwise map: out[i] = f(a[i]) or f(a[i], b[i]) over contiguous arrays of n
// elements (out may be a or b: each element is read before it is written), and f(a, b) with
// broadcasting.
//
// f is a generic lambda. When it accepts xsimd batches it is called on whole batches and then on
// scalars for the tail (xsimd's math functions, xsimd::exp and the rest, take both, as does
// simd::select below); otherwise on scalars only. Work is split into fixed blocks of whole
// batches, so which elements take the scalar path depends on n alone, never on the thread count:
// the bits are the same at any thread count.
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <vector>

#include <tbb/task_arena.h>
#include <xsimd/xsimd.hpp>

#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/kernels/simd/simd_span.h"

namespace tapegrad::kernels {

namespace simd {
// xsimd::select, and the same for a scalar, so that one formula serves batches and tails.
using xsimd::select;
template <class T>
T select(bool condition, T if_true, T if_false) {
  return condition ? if_true : if_false;
}

// f(a[i], b[i]) on each lane of two batches, for a scalar function no xsimd one matches to the bit.
template <class T, class A, class F>
xsimd::batch<T, A> lane_by_lane(const xsimd::batch<T, A>& a, const xsimd::batch<T, A>& b, F f) {
  constexpr std::size_t n = xsimd::batch<T, A>::size;
  alignas(A::alignment()) T x[n], y[n];
  a.store_aligned(x);
  b.store_aligned(y);
  for (std::size_t i = 0; i < n; ++i) x[i] = f(x[i], y[i]);
  return xsimd::batch<T, A>::load_aligned(x);
}
}  // namespace simd

namespace detail {
// Elements per parallel block: a multiple of every batch width.
inline constexpr std::size_t kMapBlock = kTaskElements;

// out[i] = f(in[i]...) for i in [begin, end), serially: batches from `begin` on, then the tail.
template <class T, class F, class... In>
void map_span(std::size_t begin, std::size_t end, T* out, F& f, const In*... in) {
  using Batch = simd::Batch<T>;
  constexpr std::size_t width = Batch::size;
  std::size_t i = begin;
  if constexpr (std::invocable<F&, decltype(Batch::load_unaligned(in))...>) {
    for (; i + width <= end; i += width) f(Batch::load_unaligned(in + i)...).store_unaligned(out + i);
  }
  for (; i < end; ++i) out[i] = f(in[i]...);
}

// f with its first (fix_first) or second (fix_second) operand held at s: one side of a broadcast
// that is a single value, for the whole array or along a row.
template <class T, class F>
auto fix_first(T s, F& f) {
  return [s, &f](auto y) { return f(decltype(y)(s), y); };
}
template <class T, class F>
auto fix_second(T s, F& f) {
  return [s, &f](auto x) { return f(x, decltype(x)(s)); };
}

template <class T, class F, class... In>
void map_blocks(std::size_t n, T* out, F& f, const In*... in) {
  static_assert(kMapBlock % simd::Batch<T>::size == 0);
  const std::size_t blocks = (n + kMapBlock - 1) / kMapBlock;
  parallel_items(blocks, kMapBlock, [&](std::size_t first, std::size_t last) {
    map_span(first * kMapBlock, std::min(n, last * kMapBlock), out, f, in...);
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

// acc[i] += add[i] for i < n. Isolated: a caller holding a lock (a node's gradient lock) must not
// pick up, while it waits for its blocks, another task that could wait for that same lock.
template <class T>
void add_into(std::size_t n, T* acc, const T* add) {
  tbb::this_task_arena::isolate([&] { map(n, acc, add, acc, [](auto a, auto b) { return a + b; }); });
}

// out = f(a, b) with broadcasting: a of a_shape and b of b_shape both broadcast to out_shape
// (kernels::broadcast_shapes), all row-major and contiguous. Equal shapes and a single-element
// operand run the flat map; otherwise rows of the last axis, in parallel, each split into
// batches and a tail by the row's length alone, so the bits do not depend on the thread count.
template <class T, class F>
void map(const T* a, const Shape& a_shape, const T* b, const Shape& b_shape, T* out, const Shape& out_shape, F f) {
  const std::size_t n = shape_product(out_shape);
  if (n == 0) return;
  const auto same = [&](const Shape& s) { return s == out_shape; };
  const auto single = [](const Shape& s) { return std::all_of(s.begin(), s.end(), [](std::size_t d) { return d == 1; }); };
  if (same(a_shape) && same(b_shape)) return map(n, a, b, out, f);
  if (single(a_shape) && same(b_shape)) return map(n, b, out, detail::fix_first(*a, f));
  if (same(a_shape) && single(b_shape)) return map(n, a, out, detail::fix_second(*b, f));
  const std::vector<std::size_t> sa = broadcast_strides(a_shape, out_shape);
  const std::vector<std::size_t> sb = broadcast_strides(b_shape, out_shape);
  const std::size_t nd = out_shape.size(), inner = out_shape.back(), rows = n / inner;
  parallel_items(rows, inner, [&](std::size_t first, std::size_t last) {
    for (std::size_t row = first; row < last; ++row) {
      std::size_t offset_a = 0, offset_b = 0;
      for (std::size_t d = nd - 1, rest = row; d-- > 0;) {
        const std::size_t index = rest % out_shape[d];
        rest /= out_shape[d];
        offset_a += index * sa[d];
        offset_b += index * sb[d];
      }
      const T* ra = a + offset_a;
      const T* rb = b + offset_b;
      T* ro = out + row * inner;
      if (sa[nd - 1] != 0 && sb[nd - 1] != 0) {
        detail::map_span(0, inner, ro, f, ra, rb);
      } else if (sa[nd - 1] == 0) {
        auto fixed = detail::fix_first(*ra, f);
        detail::map_span(0, inner, ro, fixed, rb);
      } else {
        auto fixed = detail::fix_second(*rb, f);
        detail::map_span(0, inner, ro, fixed, ra);
      }
    }
  });
}

}  // namespace tapegrad::kernels
