#pragma once
// The GEMMs of the copy-task training step that gemm_backends_bench times (gemm_backends_bench.cpp
// lists them; bf16_matmul_rows.cpp adds oneDNN's bf16 rate on each).
#include <cstddef>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace tapegrad::bench {

// One GEMM of the step as kernels::gemm / gemm_batched receive it (before gemm's own split into
// row or column blocks), operands contiguous as the ops lay them out. shared_a: one A for the
// whole batch (einsum's per-head projections "ijk,hkl->hijl" and their weight gradients).
struct Product {
  std::string label;
  std::size_t batch;
  bool trans_a, trans_b;
  std::size_t m, n, k;
  bool shared_a;
  float beta;  // 1: linear's forward adds onto the bias already in C
};

const std::vector<Product>& gemm_products();

// 2 m n k per product, as a FLOP/s rate counter.
inline void report_product_flops(benchmark::State& state, const Product& p) {
  const double flops = 2.0 * double(p.batch) * double(p.m) * double(p.n) * double(p.k);
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

// oneDNN's bf16 matmul on p (operands rounded to bf16, f32 accumulation and output), registered as
// "<label>/onednn_bf16" (the matmul alone) and "<label>/onednn_bf16_reorders" (with the two
// f32-to-bf16 reorders of A and B that a mixed-precision step would pay per product).
void register_bf16_rows(const Product& p);

// "bf16_dot_peak", the core's bf16 ceiling beside fma_peak, on a CPU with AVX512_BF16.
void register_bf16_peak();

}  // namespace tapegrad::bench
