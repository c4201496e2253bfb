#pragma once
// tapegrad's own kernel for batches of tiny matrix products: attention's per-(batch, head)
// products (q k^T, A v and their four gradient products; [10, 8] x [8, 10] in the copy task).
// A BLAS call per product costs more than the product: packing, dispatch and, in OpenBLAS, a
// memset of C for beta 0. The tiny training step (d_model 64) spent a quarter of its time in these
// calls (perf; bench/RESULTS.md, section "tiny attention products in tapegrad's own kernel").
// Here each product is computed straight from its operands, one product at a time.
#include <cstddef>

#include "autograd/kernels/gemm/onednn_matmul.h"

namespace tapegrad::kernels {

// The largest extents and multiply-adds per product small_gemm_batched takes. Above these the
// BLAS libraries' blocking and packing pay off (measured in bench/RESULTS.md, same section).
inline constexpr std::size_t kSmallGemmMaxExtent = 64;
inline constexpr std::size_t kSmallGemmMaxWork = std::size_t{1} << 12;

// Whether one product of op(A) [m, k] times op(B) [k, n] is small enough for small_gemm_batched.
bool is_small_product(std::size_t m, std::size_t n, std::size_t k);

// Products [first, last) of p: C_i = op(A_i) op(B_i) + beta * C_i, beta 0 or 1 (0: C is not read,
// as in BLAS). Each element is the sum over k in order, one fused multiply-add a term, starting from
// 0; so every bit depends only on the product's operands, never on the batch or the thread count.
// p's products must be is_small_product; m, n or k may be 0.
template <class T>
void small_gemm_batched(const detail::StridedProducts& p, std::size_t first, std::size_t last, const T* a,
                        const T* b, T beta, T* c);

}  // namespace tapegrad::kernels
