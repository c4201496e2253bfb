#pragma once
// Which library computes a float matrix product: OpenBLAS, oneDNN's matmul when tapegrad was
// built with it (TAPEGRAD_ONEDNN), or tapegrad's own kernel for tiny products (small_gemm.h).
// kernels::gemm and gemm_batched (blas.h) choose per product by the rule below, measured on the
// copy-task training step's shapes (bench/gemm_backends_bench.cpp, bench/RESULTS.md, section
// "oneDNN against OpenBLAS"); callers never choose. double products go to OpenBLAS (oneDNN has no
// f64 matmul on CPUs), the tiny ones to tapegrad's kernel as in float. In bf16 mode
// (base/matmul_precision.h) OpenBLAS computes a product from copies of its inputs rounded to bf16,
// oneDNN with its bf16 matmul.
#include <cstddef>

#include "autograd/kernels/gemm/blas_core.h"
#include "autograd/base/matmul_precision.h"
#include "autograd/base/scoped_mode.h"

namespace tapegrad::kernels {

enum class GemmBackend { kOpenBlas, kOneDnn, kSmallProducts };

// Whether this build has the oneDNN backend.
bool onednn_available();

// Whether it has, and oneDNN has a bf16 matmul for this CPU (AVX512_BF16, or AVX-512 emulating it).
bool onednn_bf16_available();

// The rule: the library measured faster on `batch` float products of op(A) [m, k] times op(B)
// [k, n] in `precision` on a CPU of level `cpu`, whether or not this build has oneDNN
// (gemm_backend_for applies it with this CPU's level). In float32, products that
// is_small_product (small_gemm.h) takes go to kSmallProducts, on every CPU.
GemmBackend preferred_gemm_backend(std::size_t batch, bool trans_a, bool trans_b, std::size_t m, std::size_t n,
                                   std::size_t k, MatmulPrecision precision, SimdLevel cpu);

// The backend every float product goes to, as an int: static_cast<int>(GemmBackend), or
// kNotForced when the rule chooses.
struct ForcedGemmBackend {
  using Value = int;
  static constexpr int kNotForced = -1;
  static Value get();
  static void set(Value backend);
};

// While alive, every float product on every thread goes to `backend` instead of the rule's choice,
// so benchmarks and tests can hold the backends against each other on the same products
// (kSmallProducts: those it takes; larger ones follow the rule). kOneDnn in a build without oneDNN
// is a ValueError. Not for use while other threads compute.
class GemmBackendGuard : public ScopedMode<ForcedGemmBackend> {
 public:
  explicit GemmBackendGuard(GemmBackend backend);
};

// The backend that computes such a product in this process: the forced one if any, else the rule
// (OpenBLAS in place of oneDNN in a build without it); OpenBLAS for alpha other than 1 or beta
// other than 0 and 1, and in bf16 when oneDNN has no bf16 matmul for this CPU.
GemmBackend gemm_backend_for(std::size_t batch, bool trans_a, bool trans_b, std::size_t m, std::size_t n,
                             std::size_t k, float alpha, float beta, MatmulPrecision precision);

}  // namespace tapegrad::kernels
