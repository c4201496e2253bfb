#include "autograd/kernels/gemm/small_gemm.h"

#include <algorithm>
#include <array>
#include <utility>

#include <xsimd/xsimd.hpp>

namespace tapegrad::kernels {

namespace {

template <class T>
using Batch = xsimd::batch<T>;

// Rows of C computed together: each B row loaded is used kRowBlock times from registers.
constexpr std::size_t kRowBlock = 4;
// Vectors of C's row computed together: kRowBlock x kVectorBlock accumulators stay in registers
// (8 of AVX2's 16).
constexpr std::size_t kVectorBlock = 2;

// op(B) [k, n] copied row by row into `packed`, rows `padded` columns apart (a whole number of
// vectors); the columns from n on are zeros written once for the whole batch.
template <class T>
void pack_b(const detail::StridedProducts& p, const T* b, std::size_t padded, T* packed) {
  if (p.trans_b) {  // B's rows are op(B)'s columns: read them in order, write with a stride
    for (std::size_t j = 0; j < p.n; ++j)
      for (std::size_t kk = 0; kk < p.k; ++kk) packed[kk * padded + j] = b[j * p.ldb + kk];
  } else {
    for (std::size_t kk = 0; kk < p.k; ++kk) std::copy_n(b + kk * p.ldb, p.n, packed + kk * padded);
  }
}

// Rows [i, i + Rows) of C, columns [j, j + Vectors * width) (of which those below n are stored).
template <class T, std::size_t Rows, std::size_t Vectors>
void block(const detail::StridedProducts& p, const T* a, const T* packed_b, std::size_t padded, std::size_t i,
           std::size_t j, T beta, T* c) {
  constexpr std::size_t width = Batch<T>::size;
  std::array<std::array<Batch<T>, Vectors>, Rows> acc;
  for (auto& row : acc) row.fill(Batch<T>(T(0)));
  const std::size_t row_step = p.trans_a ? 1 : p.lda, k_step = p.trans_a ? p.lda : 1;
  for (std::size_t kk = 0; kk < p.k; ++kk) {
    std::array<Batch<T>, Vectors> b_row;
    for (std::size_t v = 0; v < Vectors; ++v)
      b_row[v] = Batch<T>::load_unaligned(packed_b + kk * padded + j + v * width);
    for (std::size_t r = 0; r < Rows; ++r) {
      const Batch<T> a_value(a[(i + r) * row_step + kk * k_step]);
      for (std::size_t v = 0; v < Vectors; ++v) acc[r][v] = xsimd::fma(a_value, b_row[v], acc[r][v]);
    }
  }
  for (std::size_t r = 0; r < Rows; ++r) {
    T* c_row = c + (i + r) * p.ldc;
    for (std::size_t v = 0; v < Vectors; ++v) {
      const std::size_t col = j + v * width;
      if (col >= p.n) break;
      if (col + width <= p.n) {
        Batch<T> out = acc[r][v];
        if (beta != T(0)) out += Batch<T>::load_unaligned(c_row + col);
        out.store_unaligned(c_row + col);
      } else {
        alignas(64) T lanes[width];
        acc[r][v].store_aligned(lanes);
        for (std::size_t l = 0; col + l < p.n; ++l)
          c_row[col + l] = beta != T(0) ? c_row[col + l] + lanes[l] : lanes[l];
      }
    }
  }
}

template <class T, std::size_t Rows>
void row_block(const detail::StridedProducts& p, const T* a, const T* packed_b, std::size_t padded, std::size_t i,
               T beta, T* c) {
  constexpr std::size_t width = Batch<T>::size;
  std::size_t j = 0;
  for (; j + kVectorBlock * width <= padded; j += kVectorBlock * width)
    block<T, Rows, kVectorBlock>(p, a, packed_b, padded, i, j, beta, c);
  for (; j < padded; j += width) block<T, Rows, 1>(p, a, packed_b, padded, i, j, beta, c);
}

template <class T>
void one_product(const detail::StridedProducts& p, const T* a, const T* packed_b, std::size_t padded, T beta, T* c) {
  std::size_t i = 0;
  for (; i + kRowBlock <= p.m; i += kRowBlock) row_block<T, kRowBlock>(p, a, packed_b, padded, i, beta, c);
  switch (p.m - i) {
    case 3: row_block<T, 3>(p, a, packed_b, padded, i, beta, c); break;
    case 2: row_block<T, 2>(p, a, packed_b, padded, i, beta, c); break;
    case 1: row_block<T, 1>(p, a, packed_b, padded, i, beta, c); break;
    default: break;
  }
}

}  // namespace

bool is_small_product(std::size_t m, std::size_t n, std::size_t k) {
  return m <= kSmallGemmMaxExtent && n <= kSmallGemmMaxExtent && k <= kSmallGemmMaxExtent &&
         m * n * k <= kSmallGemmMaxWork;
}

template <class T>
void small_gemm_batched(const detail::StridedProducts& p, std::size_t first, std::size_t last, const T* a,
                        const T* b, T beta, T* c) {
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
    one_product(p, a + item * p.stride_a, current, padded, beta, c + item * p.stride_c);
    if (p.stride_b != 0) std::swap(current, next);
  }
}

template void small_gemm_batched<float>(const detail::StridedProducts&, std::size_t, std::size_t, const float*,
                                        const float*, float, float*);
template void small_gemm_batched<double>(const detail::StridedProducts&, std::size_t, std::size_t, const double*,
                                         const double*, double, double*);

}  // namespace tapegrad::kernels
