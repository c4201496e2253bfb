#include "autograd/kernels/blas.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include <cblas.h>
#include <tbb/parallel_for.h>

#include "autograd/kernels/bf16.h"
#include "autograd/kernels/blas_core.h"
#include "autograd/kernels/gemm_backend.h"
#include "autograd/kernels/onednn_matmul.h"

namespace tapegrad::kernels {

namespace {

// OpenBLAS's own threads inside TBB tasks would oversubscribe the cores (and can deadlock):
// TBB does all the parallel work, so OpenBLAS is pinned to one thread before the first call.
const bool openblas_single_threaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

// One large product is split along its longer output side (rows of C, or columns) into at most
// kMaxBlocks blocks of at least kMinBlock, a multiple of 16. Each block is a separate BLAS call
// that packs the other operand again, so fewer, larger blocks waste less (64-row blocks made a
// [800,512]x[512,2048] product pack its weight 13 times); four still let two threads even out.
// The partition depends only on the shape, so every bit of the result is the same at any thread
// count.
constexpr std::size_t kMaxBlocks = 4;
constexpr std::size_t kMinBlock = 64;
// Below this many multiply-adds a product runs as one call: splitting would cost more than it saves.
constexpr std::size_t kSplitThreshold = 1u << 18;

std::size_t block_size(std::size_t extent) {
  const std::size_t even_share = (extent + kMaxBlocks - 1) / kMaxBlocks;
  return (std::max(kMinBlock, even_share) + 15) / 16 * 16;
}

void call_gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
               std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

void call_gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, double alpha, const double* a,
               std::size_t lda, const double* b, std::size_t ldb, double beta, double* c, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

// One product, possibly empty in some dimension (CBLAS rejects leading dimensions of 0).
template <class T>
void gemm_serial(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,
                 const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  call_gemm(ta, tb, m, n, k, alpha, a, std::max<std::size_t>(lda, 1), b, std::max<std::size_t>(ldb, 1), beta, c,
            std::max<std::size_t>(ldc, 1));
}

// Products [first, last) of p in bf16 through OpenBLAS: each product's A and B rounded to bf16
// into dense float copies (the same layout), then multiplied in float.
void run_rounded_products(const detail::StridedProducts& p, std::size_t first, std::size_t last, float alpha,
                          const float* a, const float* b, float beta, float* c) {
  // As stored: A is [m, k], or [k, m] when read transposed; B likewise.
  const std::size_t a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
  const std::size_t b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
  thread_local std::vector<float> a_rounded, b_rounded;
  a_rounded.resize(a_rows * a_cols);
  b_rounded.resize(b_rows * b_cols);
  for (std::size_t i = first; i < last; ++i) {
    round_matrix_to_bf16(a + i * p.stride_a, a_rows, a_cols, p.lda, a_rounded.data());
    round_matrix_to_bf16(b + i * p.stride_b, b_rows, b_cols, p.ldb, b_rounded.data());
    gemm_serial(p.trans_a, p.trans_b, p.m, p.n, p.k, alpha, a_rounded.data(), a_cols, b_rounded.data(), b_cols, beta,
                c + i * p.stride_c, p.ldc);
  }
}

// Products [first, last) of p on the calling thread: one oneDNN call for all of them when
// `backend` says so (float only), else one OpenBLAS call each; float products in bf16 when
// `precision` says so.
template <class T>
void run_products(GemmBackend backend, MatmulPrecision precision, const detail::StridedProducts& p, std::size_t first,
                  std::size_t last, T alpha, const T* a, const T* b, T beta, T* c) {
  if constexpr (std::is_same_v<T, float>) {
    const bool empty = p.m == 0 || p.n == 0 || p.k == 0;
#ifdef TAPEGRAD_ONEDNN
    if (backend == GemmBackend::kOneDnn && !empty) {
      detail::StridedProducts part = p;
      part.batch = last - first;
      const auto compute = precision == MatmulPrecision::kBfloat16 ? detail::onednn_bf16_gemm : detail::onednn_sgemm;
      compute(part, a + first * p.stride_a, b + first * p.stride_b, beta, c + first * p.stride_c);
      return;
    }
#endif
    if (precision == MatmulPrecision::kBfloat16 && !empty) {
      run_rounded_products(p, first, last, alpha, a, b, beta, c);
      return;
    }
  }
  for (std::size_t i = first; i < last; ++i)
    gemm_serial(p.trans_a, p.trans_b, p.m, p.n, p.k, alpha, a + i * p.stride_a, p.lda, b + i * p.stride_b, p.ldb, beta,
                c + i * p.stride_c, p.ldc);
}

// The precision of the products the calling thread asks for now: its mode for float, never bf16
// for double.
template <class T>
MatmulPrecision precision_for() {
  if constexpr (std::is_same_v<T, float>) return matmul_precision();
  return MatmulPrecision::kFloat32;
}

// The library that computes these products (blas.h: callers never choose).
template <class T>
GemmBackend backend_for(std::size_t batch, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, T alpha,
                        T beta, MatmulPrecision precision) {
  if constexpr (std::is_same_v<T, float>) return gemm_backend_for(batch, ta, tb, m, n, k, alpha, beta, precision);
  return GemmBackend::kOpenBlas;
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
          std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc) {
  (void)openblas_single_threaded;
  warn_once_if_blas_kernels_lag();
  const MatmulPrecision precision = precision_for<T>();
  const GemmBackend backend = backend_for<T>(1, trans_a, trans_b, m, n, k, alpha, beta, precision);
  const auto one = [&](std::size_t rows, std::size_t cols, const T* a_part, const T* b_part, T* c_part) {
    run_products<T>(backend, precision, {1, trans_a, trans_b, rows, cols, k, 0, lda, 0, ldb, 0, ldc}, 0, 1, alpha,
                    a_part, b_part, beta, c_part);
  };
  const bool split_rows = m >= n;
  const std::size_t extent = split_rows ? m : n;
  if (extent <= kMinBlock || m * n * k < kSplitThreshold) {
    one(m, n, a, b, c);
    return;
  }
  const std::size_t block = block_size(extent);
  tbb::parallel_for(std::size_t{0}, (extent + block - 1) / block, [&](std::size_t blk) {
    const std::size_t first = blk * block, size = std::min(block, extent - first);
    if (split_rows) {  // rows of op(A): rows of A, or its columns when transposed
      one(size, n, trans_a ? a + first : a + first * lda, b, c + first * ldc);
    } else {  // columns of op(B): columns of B, or its rows when transposed
      one(m, size, a, trans_b ? b + first * ldb : b + first, c + first);
    }
  });
}

template <class T>
void gemm_batched(std::size_t batch, bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha,
                  const T* a, std::size_t stride_a, std::size_t lda, const T* b, std::size_t stride_b, std::size_t ldb,
                  T beta, T* c, std::size_t stride_c, std::size_t ldc) {
  (void)openblas_single_threaded;
  warn_once_if_blas_kernels_lag();
  if (batch == 1) {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Small products are grouped into tasks of at least kSplitThreshold multiply-adds, and a batch
  // smaller than that runs on the calling thread: a task per [10,16]x[16,10] attention product
  // cost more in scheduling than in arithmetic. The groups are fixed (per_task products each, the
  // last one shorter), so a oneDNN call sees the same batches at any thread count.
  const std::size_t work = std::max<std::size_t>(1, m * n * k);
  const std::size_t per_task = std::max<std::size_t>(1, kSplitThreshold / work);
  const MatmulPrecision precision = precision_for<T>();
  const GemmBackend backend = backend_for<T>(batch, trans_a, trans_b, m, n, k, alpha, beta, precision);
  const detail::StridedProducts p{batch, trans_a, trans_b, m, n, k, stride_a, lda, stride_b, ldb, stride_c, ldc};
  const auto run = [&](std::size_t group) {
    run_products<T>(backend, precision, p, group * per_task, std::min(batch, (group + 1) * per_task), alpha, a, b,
                    beta, c);
  };
  const std::size_t groups = (batch + per_task - 1) / per_task;
  if (groups == 1) {
    run(0);
    return;
  }
  tbb::parallel_for(std::size_t{0}, groups, run);
}

template void gemm<float>(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                          const float*, std::size_t, float, float*, std::size_t);
template void gemm<double>(bool, bool, std::size_t, std::size_t, std::size_t, double, const double*, std::size_t,
                           const double*, std::size_t, double, double*, std::size_t);
template void gemm_batched<float>(std::size_t, bool, bool, std::size_t, std::size_t, std::size_t, float, const float*,
                                  std::size_t, std::size_t, const float*, std::size_t, std::size_t, float, float*,
                                  std::size_t, std::size_t);
template void gemm_batched<double>(std::size_t, bool, bool, std::size_t, std::size_t, std::size_t, double,
                                   const double*, std::size_t, std::size_t, const double*, std::size_t, std::size_t,
                                   double, double*, std::size_t, std::size_t);

}  // namespace tapegrad::kernels
