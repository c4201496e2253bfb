#pragma once
// Matrix products, row-major, through OpenBLAS's CBLAS or, for the float products it measured
// faster at, oneDNN's matmul (gemm_backend.h has the rule; callers never choose). The only
// translation unit that includes <cblas.h> is blas.cpp (it clashes with xtensor-blas's enums).
#include <cstddef>

namespace tapegrad::kernels {

// C[m,n] = alpha * op(A) * op(B) + beta * C, where op(X) is X or X^T. lda/ldb/ldc are the row
// strides of A, B, C as stored. Large products are split along their longer output side into a
// few fixed blocks run by TBB, so the result is the same bit for bit at any thread count.
template <class T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
          std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc);

// batch independent products C_i = alpha * op(A_i) op(B_i) + beta * C_i with A_i = a + i*stride_a
// (and so on); a stride of 0 shares one matrix across the batch. TBB runs the batch in parallel.
template <class T>
void gemm_batched(std::size_t batch, bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha,
                  const T* a, std::size_t stride_a, std::size_t lda, const T* b, std::size_t stride_b, std::size_t ldb,
                  T beta, T* c, std::size_t stride_c, std::size_t ldc);

}  // namespace tapegrad::kernels
