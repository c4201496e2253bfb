#include "autograd/kernels/gemm/small_gemm.h"

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>

#include <xsimd/xsimd.hpp>

namespace tapegrad::kernels {

namespace {

template <class T>
using Batch = xsimd::batch<T>;

// With AVX-512 a vector load or store takes a mask of lanes: the last, partial vector of a row is
// read and written in place (the masked-off lanes are neither read nor written), so B is read
// where it lies unless it must be transposed. Without it, op(B) is packed into rows padded with
// zeros to whole vectors, and a partial vector of C is written through the stack.
#if defined(__AVX512F__)
constexpr bool kMaskedLanes = true;
static_assert(sizeof(Batch<float>) == 64, "xsimd's vectors are AVX-512's");
// AVX-512 has 32 vector registers: a block of 12 rows x 2 vectors keeps its 24 accumulators and
// 2 rows of B in registers. Attention's 10 rows are one block: 10 independent chains of
// fused multiply-adds hide the instruction's latency, where blocks of 8 and 2 waited on it.
constexpr std::size_t kRowBlock = 12;
#else
constexpr bool kMaskedLanes = false;
// AVX2 has 16: 4 rows x 2 vectors of accumulators, and B's 2.
constexpr std::size_t kRowBlock = 4;
#endif
// Vectors of C's row computed together: each row of B loaded is used kRowBlock times from registers.
constexpr std::size_t kVectorBlock = 2;

#if defined(__AVX512F__)
// Lanes [0, count) of the vector at p and zeros, count <= the width; p[count] on are not read.
template <class T>
Batch<T> load_lanes(const T* p, std::size_t count) {
  if constexpr (std::is_same_v<T, float>) {
    return Batch<T>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1), p));
  } else {
    return Batch<T>(_mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << count) - 1), p));
  }
}
#endif

// p[l] = value's lane l for l < count (or p[l] + the lane, with beta 1); p[count] on untouched.
template <class T>
void store_lanes(T* p, Batch<T> value, std::size_t count, T beta) {
  constexpr std::size_t width = Batch<T>::size;
  if (count == width) {
    if (beta != T(0)) value += Batch<T>::load_unaligned(p);
    value.store_unaligned(p);
    return;
  }
#if defined(__AVX512F__)
  if (beta != T(0)) value += load_lanes(p, count);
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << count) - 1), value);
  } else {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>((1u << count) - 1), value);
  }
#else
  alignas(64) T lanes[width];
  value.store_aligned(lanes);
  for (std::size_t l = 0; l < count; ++l) p[l] = beta != T(0) ? p[l] + lanes[l] : lanes[l];
#endif
}

// acc + a * b, rounded once. xsimd 8 has no AVX-512 kernel for its fma: it falls back to a * b +
// acc, which GCC contracts into one instruction and clang does not, so the bits depended on the
// compiler (the sanitized build's clang failed the sequential-FMA test).
template <class T>
Batch<T> fused_multiply_add(Batch<T> a, Batch<T> b, Batch<T> acc) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    return Batch<T>(_mm512_fmadd_ps(a, b, acc));
  } else {
    return Batch<T>(_mm512_fmadd_pd(a, b, acc));
  }
#else
  return xsimd::fma(a, b, acc);
#endif
}

// Where the rows of op(B) [k, n] are read from: B itself, or its packed copy; rows `ld` apart.
template <class T>
struct RowsOfB {
  const T* first;
  std::size_t ld;
};

#if defined(__AVX512F__)
// op(B) = B^T for B of n <= 16 rows of k <= 16 floats, into k rows of 16 (n's columns and zeros):
// B's rows as vectors (zeros for the missing ones), transposed in registers. The scalar copy it
// replaces took half the time of the tiny step's attention scores q k^T.
void transpose_into_rows_of_16(const float* b, std::size_t ldb, std::size_t n, std::size_t k, float* packed) {
  const auto row_lanes = static_cast<__mmask16>((1u << k) - 1);
  __m512 rows[16], pairs[16], quads[16];
  for (std::size_t j = 0; j < 16; ++j) rows[j] = j < n ? _mm512_maskz_loadu_ps(row_lanes, b + j * ldb) : _mm512_setzero_ps();
  // In each 128-bit lane L: pairs[2p] holds columns 4L, 4L+1 of rows 2p, 2p+1 interleaved;
  // pairs[2p+1] columns 4L+2, 4L+3.
  for (std::size_t q = 0; q < 8; ++q) {
    pairs[2 * q] = _mm512_unpacklo_ps(rows[2 * q], rows[2 * q + 1]);
    pairs[2 * q + 1] = _mm512_unpackhi_ps(rows[2 * q], rows[2 * q + 1]);
  }
  // quads[4q + s], lane L: column 4L + s of rows 4q to 4q + 3.
  const auto as_pd = [](__m512 v) { return _mm512_castps_pd(v); };
  for (std::size_t q = 0; q < 4; ++q) {
    const __m512* t = pairs + 4 * q;
    quads[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(as_pd(t[0]), as_pd(t[2])));
    quads[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(as_pd(t[0]), as_pd(t[2])));
    quads[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(as_pd(t[1]), as_pd(t[3])));
    quads[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(as_pd(t[1]), as_pd(t[3])));
  }
  // Column 4L + s of all 16 rows: lane L of quads[s], quads[4 + s], quads[8 + s], quads[12 + s].
  for (std::size_t s = 0; s < 4; ++s) {
    const __m512 first_01 = _mm512_shuffle_f32x4(quads[s], quads[4 + s], 0x44);  // lanes 0, 1 of each
    const __m512 last_01 = _mm512_shuffle_f32x4(quads[8 + s], quads[12 + s], 0x44);
    const __m512 first_23 = _mm512_shuffle_f32x4(quads[s], quads[4 + s], 0xEE);  // lanes 2, 3 of each
    const __m512 last_23 = _mm512_shuffle_f32x4(quads[8 + s], quads[12 + s], 0xEE);
    const __m512 columns[4] = {_mm512_shuffle_f32x4(first_01, last_01, 0x88), _mm512_shuffle_f32x4(first_01, last_01, 0xDD),
                               _mm512_shuffle_f32x4(first_23, last_23, 0x88), _mm512_shuffle_f32x4(first_23, last_23, 0xDD)};
    for (std::size_t lane = 0; lane < 4; ++lane)
      if (4 * lane + s < k) _mm512_storeu_ps(packed + (4 * lane + s) * 16, columns[lane]);
  }
}
#endif

// op(B) copied row by row into `packed`, rows `padded` columns apart (a whole number of vectors);
// the columns from n on are zeros written once for the whole batch.
template <class T>
void pack_b(const detail::StridedProducts& p, const T* b, std::size_t padded, T* packed) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    if (p.trans_b && p.n <= 16 && p.k <= 16) return transpose_into_rows_of_16(b, p.ldb, p.n, p.k, packed);
  }
#endif
  if (p.trans_b) {  // B's rows are op(B)'s columns: read them in order, write with a stride
    for (std::size_t j = 0; j < p.n; ++j)
      for (std::size_t kk = 0; kk < p.k; ++kk) packed[kk * padded + j] = b[j * p.ldb + kk];
  } else {
    for (std::size_t kk = 0; kk < p.k; ++kk) std::copy_n(b + kk * p.ldb, p.n, packed + kk * padded);
  }
}

// Rows [i, i + Rows) of C, columns [j, j + Vectors * width) (of which those below n are stored).
// Every loop but the one over k has a fixed length and unrolls, so that the accumulators stay in
// registers.
template <class T, std::size_t Rows, std::size_t Vectors>
void block(const detail::StridedProducts& p, const T* a, RowsOfB<T> b, std::size_t i, std::size_t j, T beta, T* c) {
  constexpr std::size_t width = Batch<T>::size;
  std::array<std::size_t, Vectors> lanes;  // of each vector, the columns below n
  for (std::size_t v = 0; v < Vectors; ++v) {
    const std::size_t col = j + v * width;
    lanes[v] = col < p.n ? std::min(width, p.n - col) : 0;
  }
  Batch<T> acc[Rows][Vectors];
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t v = 0; v < Vectors; ++v) acc[r][v] = Batch<T>(T(0));
  const std::size_t row_step = p.trans_a ? 1 : p.lda, k_step = p.trans_a ? p.lda : 1;
  for (std::size_t kk = 0; kk < p.k; ++kk) {
    const T* b_row = b.first + kk * b.ld + j;
    Batch<T> b_vectors[Vectors];
    for (std::size_t v = 0; v < Vectors; ++v) {
      if constexpr (kMaskedLanes) {
        const T* at = b_row + v * width;
        b_vectors[v] = lanes[v] == width ? Batch<T>::load_unaligned(at) : load_lanes(at, lanes[v]);
      } else {
        b_vectors[v] = Batch<T>::load_unaligned(b_row + v * width);  // packed: zeros past n
      }
    }
    for (std::size_t r = 0; r < Rows; ++r) {
      const Batch<T> a_value(a[(i + r) * row_step + kk * k_step]);
      for (std::size_t v = 0; v < Vectors; ++v) acc[r][v] = fused_multiply_add(a_value, b_vectors[v], acc[r][v]);
    }
  }
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t v = 0; v < Vectors; ++v)
      if (lanes[v] > 0) store_lanes(c + (i + r) * p.ldc + j + v * width, acc[r][v], lanes[v], beta);
}

template <class T, std::size_t Rows>
void row_block(const detail::StridedProducts& p, const T* a, RowsOfB<T> b, std::size_t i, T beta, T* c) {
  constexpr std::size_t width = Batch<T>::size;
  std::size_t j = 0;
  for (; j + kVectorBlock * width <= p.n; j += kVectorBlock * width)
    block<T, Rows, kVectorBlock>(p, a, b, i, j, beta, c);
  if (j + width < p.n) {
    block<T, Rows, kVectorBlock>(p, a, b, i, j, beta, c);  // a whole vector and a partial one
  } else if (j < p.n) {
    block<T, Rows, 1>(p, a, b, i, j, beta, c);
  }
}

// The last `rows` rows of C from row i, fewer than kRowBlock, as one block of that many.
template <class T, std::size_t Rows = kRowBlock - 1>
void last_rows(std::size_t rows, const detail::StridedProducts& p, const T* a, RowsOfB<T> b, std::size_t i, T beta,
               T* c) {
  if constexpr (Rows > 0) {
    if (rows == Rows) {
      row_block<T, Rows>(p, a, b, i, beta, c);
    } else {
      last_rows<T, Rows - 1>(rows, p, a, b, i, beta, c);
    }
  }
}

template <class T>
void one_product(const detail::StridedProducts& p, const T* a, RowsOfB<T> b, T beta, T* c) {
  std::size_t i = 0;
  for (; i + kRowBlock <= p.m; i += kRowBlock) row_block<T, kRowBlock>(p, a, b, i, beta, c);
  last_rows<T>(p.m - i, p, a, b, i, beta, c);
}

}  // namespace

bool is_small_product(std::size_t m, std::size_t n, std::size_t k) {
  return m <= kSmallGemmMaxExtent && n <= kSmallGemmMaxExtent && k <= kSmallGemmMaxExtent &&
         m * n * k <= kSmallGemmMaxWork;
}

template <class T>
void small_gemm_batched(const detail::StridedProducts& p, std::size_t first, std::size_t last, const T* a,
                        const T* b, T beta, T* c) {
  if (p.n == 0) return;
  if (kMaskedLanes && !p.trans_b) {  // B read where it lies
    for (std::size_t item = first; item < last; ++item)
      one_product(p, a + item * p.stride_a, RowsOfB<T>{b + item * p.stride_b, p.ldb}, beta, c + item * p.stride_c);
    return;
  }
  constexpr std::size_t width = Batch<T>::size;
  const std::size_t padded = (p.n + width - 1) / width * width;
  // Two copies of op(B), at most kSmallGemmMaxExtent rows of kSmallGemmMaxExtent columns rounded up
  // to vectors: the next product's B is packed before this one is computed, so that the vector
  // loads of a copy never wait on the scalar stores that just wrote it (a store-forwarding stall
  // that took a quarter of the time of the copy task's q k^T). A B shared by the batch is packed once.
  constexpr std::size_t kCapacity = kSmallGemmMaxExtent * ((kSmallGemmMaxExtent + width - 1) / width * width);
  alignas(64) std::array<T, 2 * kCapacity> buffers;
  T* current = buffers.data();
  T* next = buffers.data() + kCapacity;
  for (T* buffer : {current, next})
    for (std::size_t kk = 0; kk < p.k; ++kk) std::fill(buffer + kk * padded + p.n, buffer + (kk + 1) * padded, T(0));
  if (first < last) pack_b(p, b + first * p.stride_b, padded, current);
  for (std::size_t item = first; item < last; ++item) {
    if (p.stride_b != 0 && item + 1 < last) pack_b(p, b + (item + 1) * p.stride_b, padded, next);
    one_product(p, a + item * p.stride_a, RowsOfB<T>{current, padded}, beta, c + item * p.stride_c);
    if (p.stride_b != 0) std::swap(current, next);
  }
}

template void small_gemm_batched<float>(const detail::StridedProducts&, std::size_t, std::size_t, const float*,
                                        const float*, float, float*);
template void small_gemm_batched<double>(const detail::StridedProducts&, std::size_t, std::size_t, const double*,
                                         const double*, double, double*);

}  // namespace tapegrad::kernels
