// gemm_backends_bench: OpenBLAS against oneDNN's f32 matmul (and, on products small enough for it,
// tapegrad's own small-product kernel) on the GEMMs of the copy-task training
// step (train_step/tiny and train_step/paper), each product through tapegrad's own entry
// (kernels::gemm or gemm_batched, as the ops call them) with the backend forced, side by side in
// one run, at 1 thread. The rule in autograd/kernels/gemm/gemm_backend.cpp follows from its numbers.
//
//   gemm_backends_bench [Google Benchmark flags]    e.g. --benchmark_repetitions=3
//
// Rows are "<step>/<product>/<backend>"; the FLOP/s column counts 2 m n k per product. The row
// fma_peak is the core's own ceiling: vector FMAs on registers. Where
// oneDNN has bf16 matmul for the CPU, each product also gets its bf16 rows (bf16_matmul_rows.cpp).
#include <cstdlib>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include "autograd/base/generator.h"
#include "autograd/kernels/gemm/blas.h"
#include "autograd/kernels/gemm/gemm_backend.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/gemm/small_gemm.h"
#include "autograd/core/tensor.h"
#include "bench/gemm_products.h"

namespace tapegrad::bench {

// From a trace of every cblas_sgemm call of both steps (d_model 64 / 512, d_ff 256 / 2048, 4 / 8
// heads, batch 32 / 80, 10 source and 9 target tokens): the encoder's shapes (the decoder's have
// 288 / 720 rows and 9-token attention), every layout the step uses.
const std::vector<Product>& gemm_products() {
  static const std::vector<Product> list = {
      {"tiny/linear_64x64_fwd", 1, false, true, 320, 64, 64, false, 1},
      {"tiny/ffn1_fwd", 1, false, true, 320, 256, 64, false, 1},
      {"tiny/ffn2_fwd", 1, false, true, 320, 64, 256, false, 1},
      {"tiny/ffn2_dx", 1, false, false, 320, 256, 64, false, 0},
      {"tiny/ffn1_dx", 1, false, false, 320, 64, 256, false, 0},
      {"tiny/ffn1_dw", 1, true, false, 256, 64, 320, false, 0},
      {"tiny/linear_64x64_dw", 1, true, false, 64, 64, 320, false, 0},
      {"tiny/head_proj_fwd", 4, false, false, 320, 16, 64, true, 0},
      {"tiny/head_proj_dw", 4, true, false, 64, 16, 320, true, 0},
      {"tiny/scores_qkT", 128, false, true, 10, 10, 16, false, 0},
      {"tiny/attn_v", 128, false, false, 10, 16, 10, false, 0},
      {"tiny/attn_bwd_tn", 128, true, false, 10, 16, 10, false, 0},
      {"tiny/generator_fwd", 1, false, true, 288, 11, 64, false, 1},
      // The copy task's own model (d_model 32, 4 heads: d_k 8, batch 80), and two products at the
      // edge of what the small-product kernel takes (small_gemm.h).
      {"copy/scores_qkT", 320, false, true, 10, 10, 8, false, 0},
      {"copy/attn_v", 320, false, false, 10, 8, 10, false, 0},
      {"copy/attn_bwd_tn", 320, true, false, 10, 8, 10, false, 0},
      {"edge/16x16x16", 64, false, false, 16, 16, 16, false, 0},
      {"edge/64x16x4_nt", 16, false, true, 64, 16, 4, false, 0},
      {"paper/ffn1_fwd", 1, false, true, 800, 2048, 512, false, 1},
      {"paper/ffn2_fwd", 1, false, true, 800, 512, 2048, false, 1},
      {"paper/linear_512x512_fwd", 1, false, true, 800, 512, 512, false, 1},
      {"paper/ffn2_dx", 1, false, false, 800, 2048, 512, false, 0},
      {"paper/ffn1_dx", 1, false, false, 800, 512, 2048, false, 0},
      {"paper/ffn1_dw", 1, true, false, 2048, 512, 800, false, 0},
      {"paper/ffn2_dw", 1, true, false, 512, 2048, 800, false, 0},
      {"paper/linear_512x512_dw", 1, true, false, 512, 512, 800, false, 0},
      {"paper/head_proj_fwd", 8, false, false, 800, 64, 512, true, 0},
      {"paper/head_proj_dw", 8, true, false, 512, 64, 800, true, 0},
      {"paper/scores_qkT", 640, false, true, 10, 10, 64, false, 0},
      {"paper/attn_v", 640, false, false, 10, 64, 10, false, 0},
      {"paper/attn_bwd_tn", 640, true, false, 10, 64, 10, false, 0},
  };
  return list;
}

namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  Generator gen(seed);
  const auto t = Tensor<float>::randn({n}, gen);
  return {t.value().begin(), t.value().end()};
}

void time_product(benchmark::State& state, const Product& p, kernels::GemmBackend backend) {
  const kernels::GemmBackendGuard force(backend);
  const std::size_t lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n, ldc = p.n;
  const std::size_t stride_a = p.shared_a ? 0 : p.m * p.k, stride_b = p.k * p.n, stride_c = p.m * p.n;
  const std::vector<float> a = random_values((p.shared_a ? 1 : p.batch) * p.m * p.k, 1);
  const std::vector<float> b = random_values(p.batch * p.k * p.n, 2);
  std::vector<float> c = random_values(p.batch * p.m * p.n, 3);
  for (auto _ : state) {
    if (p.batch == 1) {
      kernels::gemm(p.trans_a, p.trans_b, p.m, p.n, p.k, 1.0f, a.data(), lda, b.data(), ldb, p.beta, c.data(), ldc);
    } else {
      kernels::gemm_batched(p.batch, p.trans_a, p.trans_b, p.m, p.n, p.k, 1.0f, a.data(), stride_a, lda, b.data(),
                            stride_b, ldb, p.beta, c.data(), stride_c, ldc);
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  report_product_flops(state, p);
}

// The core's float FMA peak, the ceiling every rate above is read against: independent chains of
// vector fused multiply-adds on registers, no memory traffic. (GCC contracts xsimd's a * b + c
// into one instruction; the row's FLOP/s count 2 per lane.)
void time_fma_peak(benchmark::State& state) {
  using Vector = xsimd::batch<float>;
  constexpr std::size_t kChains = 16, kSteps = 4096;  // enough chains to cover the FMA latency
  const Vector scale(0.999999f), shift(1e-7f);
  for (auto _ : state) {
    Vector acc[kChains];
    for (std::size_t c = 0; c < kChains; ++c) acc[c] = Vector(1.0f + 1e-3f * static_cast<float>(c));
    for (std::size_t step = 0; step < kSteps; ++step)
      for (std::size_t c = 0; c < kChains; ++c) acc[c] = xsimd::fma(acc[c], scale, shift);
    Vector total(0.0f);
    for (const Vector& a : acc) total += a;
    benchmark::DoNotOptimize(total);
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kChains * kSteps * Vector::size * 2, benchmark::Counter::kIsRate);
}

void register_products() {
  benchmark::RegisterBenchmark("fma_peak", time_fma_peak)->UseRealTime()->Unit(benchmark::kMicrosecond);
#ifdef TAPEGRAD_BENCH_BF16
  register_bf16_peak();
#endif
  for (const Product& p : gemm_products()) {
    std::vector<std::pair<std::string, kernels::GemmBackend>> backends = {{"openblas", kernels::GemmBackend::kOpenBlas}};
    if (kernels::onednn_available()) backends.emplace_back("onednn", kernels::GemmBackend::kOneDnn);
    if (kernels::is_small_product(p.m, p.n, p.k)) backends.emplace_back("small", kernels::GemmBackend::kSmallProducts);
    for (const auto& [name, backend] : backends) {
      benchmark::RegisterBenchmark((p.label + "/" + name).c_str(),
                                   [p, backend = backend](benchmark::State& state) { time_product(state, p, backend); })
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
#ifdef TAPEGRAD_BENCH_BF16
    // oneDNN 2.6 has bf16 matmul only from AVX-512 on (making the primitive throws on AVX2).
    if (kernels::onednn_bf16_available()) register_bf16_rows(p);
#endif
  }
}

}  // namespace

}  // namespace tapegrad::bench

int main(int argc, char** argv) {
  // Both libraries at one thread: the step's rates at 1 thread are what the rule compares.
  tapegrad::set_num_threads(1);
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  benchmark::AddCustomContext("OPENBLAS_CORETYPE", coretype ? coretype : "(unset)");
  benchmark::AddCustomContext("tapegrad_threads", "1");
  tapegrad::bench::register_products();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
