#include "autograd/kernels/gemm/gemm_backend.h"

#include <atomic>

#include "autograd/base/errors.h"
#include "autograd/kernels/gemm/blas_core.h"
#include "autograd/kernels/gemm/small_gemm.h"
#ifdef TAPEGRAD_ONEDNN
#include "autograd/kernels/gemm/onednn_matmul.h"
#endif

namespace tapegrad::kernels {

namespace {

std::atomic<int> forced{ForcedGemmBackend::kNotForced};

}  // namespace

bool onednn_available() {
#ifdef TAPEGRAD_ONEDNN
  return true;
#else
  return false;
#endif
}

// Measured at 1 thread on the copy-task step's products, three runs (bench/RESULTS.md, section "oneDNN against
// OpenBLAS"; AMD Zen 5, OpenBLAS's SkylakeX kernels, oneDNN 2.6.3):
// - read as NN or TN (the backward's dX = G W and dW = G^T X, the per-head projections), oneDNN
//   runs at 1.06-1.17x OpenBLAS's rate (median of the runs; single runs 0.94-1.18x) from 2^22
//   multiply-adds a product up (5.2M in the tiny model, 26-840M in the paper one), and at
//   0.61-0.69x on the tiny model's per-head products (330k);
// - read as NT (linear's forward, x W^T onto the bias in C) it is 0.93-1.07x at the paper's sizes
//   and 0.72-0.86x at the tiny model's (but for one 1.01-1.09x): OpenBLAS stays;
// - a batch of NT products with k <= 16 (attention scores q k^T at d_k 16, 128 of 10x10x16) runs
//   1.9x as fast in one oneDNN call as in OpenBLAS's calls; at d_k 64, and batches of the other
//   attention products, OpenBLAS's calls are 1.1-1.8x as fast.
// In bf16, oneDNN's bf16 matmul (its two reorders counted) ran at 1.5-2.3x OpenBLAS's float rate
// on every product of the step from 327k multiply-adds up, whatever the layout, and OpenBLAS's
// rounded path costs a float product and more; below, the batches of attention products, its
// calls were 0.44-0.74x OpenBLAS's but for the narrow scores (1.87x).
// On a CPU without AVX-512 (AMD Zen 3, AVX2: oneDNN's AVX2 kernels against OpenBLAS's Haswell ones)
// oneDNN's f32 matmul lost on the large products: 0.45x OpenBLAS's rate on the paper model's weight
// gradients, 0.68x on a paper dX, at most 1.35x on one tiny dW; the paper step took 1.4x its
// OpenBLAS-only time (bench/RESULTS.md, section "on an AVX2 machine"). There the large NN and TN
// products go to OpenBLAS.
// Products of at most 64 rows, columns and inner extent and 2^12 multiply-adds (attention's
// per-(batch, head) products at seq 10 up to d_k 16, in every layout) go to tapegrad's own kernel
// (small_gemm.h), on every CPU: a library call costs more than such a product. On AVX2 (Zen 3) it
// ran the copy task's and the tiny step's attention products at 1.0-2.1x OpenBLAS's rate and
// 2.6-5x oneDNN's; on larger ones (8192 multiply-adds, or the paper's 10x64x10) at 0.7-1.07x
// (bench/RESULTS.md, section "tiny attention products in tapegrad's own kernel"). On AVX-512
// (Zen 5, OpenBLAS's SkylakeX kernels, whose own small-matrix path is fast) it ran them at
// 0.67-0.79x OpenBLAS's rate on the tiny step's NN and TN products and 1.4-2.1x on the copy task's
// TN and both scores, and at 0.61-0.87x oneDNN's on the scores; its bits were the same as both
// libraries' on every one of these shapes. A choice per shape would gain about 1% of the tiny
// step: the rule stays (bench/RESULTS.md, issue 40, "the small-product kernel on AVX-512").
// Longer narrow scores (seq 128 at d_k 16) keep the rule above.
constexpr std::size_t kLargeProduct = std::size_t{1} << 22;
constexpr std::size_t kLargeBf16Product = std::size_t{1} << 18;
constexpr std::size_t kNarrowScores = 16;

GemmBackend preferred_gemm_backend(std::size_t batch, bool trans_a, bool trans_b, std::size_t m, std::size_t n,
                                   std::size_t k, MatmulPrecision precision, SimdLevel cpu) {
  if (precision == MatmulPrecision::kFloat32 && is_small_product(m, n, k)) return GemmBackend::kSmallProducts;
  const bool nt = !trans_a && trans_b;
  const bool narrow_scores = nt && batch > 1 && k <= kNarrowScores;
  if (precision == MatmulPrecision::kBfloat16)
    return narrow_scores || m * n * k >= kLargeBf16Product ? GemmBackend::kOneDnn : GemmBackend::kOpenBlas;
  if (nt) return narrow_scores ? GemmBackend::kOneDnn : GemmBackend::kOpenBlas;
  return m * n * k >= kLargeProduct && cpu >= SimdLevel::kAvx512 ? GemmBackend::kOneDnn : GemmBackend::kOpenBlas;
}

bool onednn_bf16_available() {
#ifdef TAPEGRAD_ONEDNN
  return detail::onednn_has_bf16_matmul();
#else
  return false;
#endif
}

GemmBackend gemm_backend_for(std::size_t batch, bool trans_a, bool trans_b, std::size_t m, std::size_t n,
                             std::size_t k, float alpha, float beta, MatmulPrecision precision) {
  if (alpha != 1.0f || (beta != 0.0f && beta != 1.0f)) return GemmBackend::kOpenBlas;
  if (precision == MatmulPrecision::kBfloat16 && !onednn_bf16_available()) return GemmBackend::kOpenBlas;
  const int f = forced.load(std::memory_order_relaxed);
  const auto forced_backend = static_cast<GemmBackend>(f);
  if (f != ForcedGemmBackend::kNotForced && (forced_backend != GemmBackend::kSmallProducts || is_small_product(m, n, k)))
    return forced_backend;
  static const SimdLevel cpu = cpu_simd_level();
  const GemmBackend rule = preferred_gemm_backend(batch, trans_a, trans_b, m, n, k, precision, cpu);
  return rule == GemmBackend::kOneDnn && !onednn_available() ? GemmBackend::kOpenBlas : rule;
}

int ForcedGemmBackend::get() { return forced.load(std::memory_order_relaxed); }

void ForcedGemmBackend::set(int backend) { forced.store(backend, std::memory_order_relaxed); }

namespace {

int available_backend(GemmBackend backend) {
  if (backend == GemmBackend::kOneDnn && !onednn_available()) {
    throw ValueError("GemmBackendGuard: this tapegrad was built without oneDNN (TAPEGRAD_ONEDNN is off), so its "
                     "matrix products cannot be forced onto it");
  }
  return static_cast<int>(backend);
}

}  // namespace

GemmBackendGuard::GemmBackendGuard(GemmBackend backend) : ScopedMode(available_backend(backend)) {}

}  // namespace tapegrad::kernels
