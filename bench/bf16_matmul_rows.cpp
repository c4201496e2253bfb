// oneDNN's bare bf16 matmul primitive on the training step's GEMMs, against which mixed
// precision is measured; tapegrad's own bf16 mode goes through kernels::gemm. A and B are reordered from f32
// to bf16 (dense, the same logical layout, transposes kept), C stays f32 and oneDNN accumulates in
// f32; the primitives are made once per row. Built into gemm_backends_bench when tapegrad has
// oneDNN.
#include <immintrin.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench/gemm_products.h"

// Debian's libdnnl runs on libgomp (linked by bench/CMakeLists.txt): one OpenMP thread, as the f32
// rows get inside tapegrad.
extern "C" void omp_set_num_threads(int);

namespace tapegrad::bench {

namespace {

using dnnl::memory;

// [batch, rows, cols] stored row-major, or as [batch, cols, rows] read transposed; a matrix shared
// by the batch is a batch of 1, which oneDNN broadcasts.
memory::desc matrices(memory::data_type type, std::size_t batch, std::size_t rows, std::size_t cols, bool transposed) {
  const auto d = [](std::size_t v) { return static_cast<memory::dim>(v); };
  return memory::desc({d(batch), d(rows), d(cols)}, type, transposed ? memory::format_tag::acb : memory::format_tag::abc);
}

void time_bf16(benchmark::State& state, const Product& p, bool with_reorders) {
  omp_set_num_threads(1);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  using type = memory::data_type;
  const std::size_t batch_a = p.shared_a ? 1 : p.batch;
  memory a32(matrices(type::f32, batch_a, p.m, p.k, p.trans_a), engine);
  memory b32(matrices(type::f32, p.batch, p.k, p.n, p.trans_b), engine);
  memory a16(matrices(type::bf16, batch_a, p.m, p.k, p.trans_a), engine);
  memory b16(matrices(type::bf16, p.batch, p.k, p.n, p.trans_b), engine);
  memory c32(matrices(type::f32, p.batch, p.m, p.n, false), engine);
  for (const memory& m : {a32, b32, c32}) {
    auto* values = static_cast<float*>(m.get_data_handle());
    for (std::size_t i = 0; i < m.get_desc().get_size() / sizeof(float); ++i) values[i] = float(i % 7) * 0.25f - 0.75f;
  }
  dnnl::primitive_attr attr;
  if (p.beta != 0) {  // C += op(A) op(B), as the f32 rows
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  const dnnl::matmul matmul(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a16.get_desc(), b16.get_desc(), c32.get_desc()), attr, engine));
  const dnnl::reorder to_bf16_a(a32, a16), to_bf16_b(b32, b16);
  to_bf16_a.execute(stream, a32, a16);
  to_bf16_b.execute(stream, b32, b16);
  for (auto _ : state) {
    if (with_reorders) {
      to_bf16_a.execute(stream, a32, a16);
      to_bf16_b.execute(stream, b32, b16);
    }
    matmul.execute(stream, {{DNNL_ARG_SRC, a16}, {DNNL_ARG_WEIGHTS, b16}, {DNNL_ARG_DST, c32}});
    stream.wait();
  }
  report_product_flops(state, p);
}

// The core's bf16 ceiling, as fma_peak is its float one: independent chains of AVX512_BF16 dot
// products (vdpbf16ps: per float lane, two bf16 products added to the lane) on registers. Each
// instruction counts 4 FLOP per lane, as oneDNN's bf16 rows count 2 m n k.
__attribute__((target("avx512f,avx512bf16"))) void time_bf16_dot_peak(benchmark::State& state) {
  constexpr std::size_t kChains = 16, kSteps = 4096;  // enough chains to cover the instruction's latency
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(1.001f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(-1e-3f));
  for (auto _ : state) {
    __m512 acc[kChains];
    for (std::size_t c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + 1e-3f * static_cast<float>(c));
    for (std::size_t step = 0; step < kSteps; ++step)
      for (std::size_t c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    __m512 total = _mm512_setzero_ps();
    for (const __m512& v : acc) total = _mm512_add_ps(total, v);
    benchmark::DoNotOptimize(total);
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kChains * kSteps * 16 * 4, benchmark::Counter::kIsRate);
}

}  // namespace

void register_bf16_peak() {
  if (__builtin_cpu_supports("avx512bf16"))
    benchmark::RegisterBenchmark("bf16_dot_peak", time_bf16_dot_peak)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void register_bf16_rows(const Product& p) {
  for (const bool with_reorders : {false, true}) {
    benchmark::RegisterBenchmark((p.label + (with_reorders ? "/onednn_bf16_reorders" : "/onednn_bf16")).c_str(),
                                 [p, with_reorders](benchmark::State& state) { time_bf16(state, p, with_reorders); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace tapegrad::bench
