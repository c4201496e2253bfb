#pragma once
// oneDNN's f32 (and bf16) matmul, the second backend behind kernels::gemm and gemm_batched (blas.h), which
// decide per product which library computes it. Built only when CMake finds oneDNN
// (TAPEGRAD_ONEDNN). Debian's libdnnl runs its parallel loops on OpenMP: every thread that calls
// in is first pinned to one OpenMP thread, so TBB stays the one runtime that spreads work.
#include <cstddef>
#include <cstdint>

namespace tapegrad::kernels::detail {

// batch products C_i = op(A_i) op(B_i) + beta * C_i, row-major, A_i = a + i * stride_a (a stride
// of 0 shares one matrix across the batch), every extent at least 1; beta is 0 or 1.
struct StridedProducts {
  std::size_t batch;
  bool trans_a, trans_b;
  std::size_t m, n, k;
  std::size_t stride_a, lda, stride_b, ldb, stride_c, ldc;
};

void onednn_sgemm(const StridedProducts& p, const float* a, const float* b, float beta, float* c);

// The same products of A and B given as bf16 (kernels/gemm/bf16.h's bits), accumulated in float32 into
// C (base/matmul_precision.h's bf16 mode). Needs onednn_has_bf16_matmul().
void onednn_bf16_gemm(const StridedProducts& p, const std::uint16_t* a, const std::uint16_t* b, float beta, float* c);

// Whether oneDNN has a bf16 matmul for this CPU (AVX512_BF16, or its emulation on AVX-512 cores).
bool onednn_has_bf16_matmul();

}  // namespace tapegrad::kernels::detail
