#include "autograd/kernels/gemm/onednn_matmul.h"

#include <cstdint>
#include <functional>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

// Debian's libdnnl is built on libgomp (dnnl_config.h: DNNL_CPU_RUNTIME DNNL_RUNTIME_OMP);
// CMake links the same libgomp, so this reaches the runtime oneDNN reads its thread count from.
extern "C" void omp_set_num_threads(int);

namespace tapegrad::kernels::detail {

namespace {

using dnnl::memory;

// OpenMP's thread count is per thread (each TBB worker starts with one thread per core), and
// oneDNN reads it when a primitive is created and run: pinning each calling thread to 1 keeps
// OpenMP from starting a team inside a TBB task.
void pin_openmp_to_one_thread() {
  thread_local const bool pinned = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)pinned;
}

// Never destroyed: TBB's worker threads may release their cached primitives and streams, which
// refer to it, after static destructors have run.
const dnnl::engine& cpu_engine() {
  static const dnnl::engine* const engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

memory::dim dim(std::size_t v) { return static_cast<memory::dim>(v); }

// [batch, rows, cols] elements of `type` with the given row and column strides; a batch stride of
// 0 (one matrix shared by the batch) becomes a batch of 1, which oneDNN broadcasts.
memory::desc matrices(memory::data_type type, std::size_t batch, std::size_t batch_stride, std::size_t rows,
                      std::size_t cols, std::size_t row_stride, std::size_t col_stride) {
  const std::size_t span = rows * row_stride + cols * col_stride;  // any stride past one matrix
  return memory::desc({batch_stride == 0 ? 1 : dim(batch), dim(rows), dim(cols)}, type,
                      {dim(batch_stride == 0 ? span : batch_stride), dim(row_stride), dim(col_stride)});
}

struct Key {
  StridedProducts p;
  bool accumulate;
  bool bf16;
  bool operator==(const Key& o) const {
    const auto& q = o.p;
    return accumulate == o.accumulate && bf16 == o.bf16 && p.batch == q.batch && p.trans_a == q.trans_a &&
           p.trans_b == q.trans_b &&
           p.m == q.m && p.n == q.n && p.k == q.k && p.stride_a == q.stride_a && p.lda == q.lda &&
           p.stride_b == q.stride_b && p.ldb == q.ldb && p.stride_c == q.stride_c && p.ldc == q.ldc;
  }
};

struct KeyHash {
  std::size_t operator()(const Key& key) const {
    const StridedProducts& p = key.p;
    std::size_t h = (std::size_t{key.bf16} << 3) | (std::size_t{key.accumulate} << 2) | (std::size_t{p.trans_a} << 1) |
                    std::size_t{p.trans_b};
    for (std::size_t v : {p.batch, p.m, p.n, p.k, p.stride_a, p.lda, p.stride_b, p.ldb, p.stride_c, p.ldc})
      h = h * 1000003u ^ std::hash<std::size_t>{}(v);
    return h;
  }
};

// A primitive and its memory objects, made once per layout and reused with new data pointers
// (creating a primitive descriptor costs tens of microseconds, more than a small product).
struct Matmul {
  dnnl::matmul primitive;
  memory src, weights, dst;
};

dnnl::matmul matmul_primitive(const memory::desc& a, const memory::desc& b, const memory::desc& c, bool accumulate) {
  dnnl::primitive_attr attr;
  if (accumulate) {  // C = op(A) op(B) + C
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  return dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, cpu_engine()));
}

Matmul make_matmul(const Key& key) {
  const StridedProducts& p = key.p;
  const memory::data_type in = key.bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  // op(A) is [m, k]: A as stored is [m, k] (strides lda, 1) or [k, m] read transposed (1, lda).
  const memory::desc a = p.trans_a ? matrices(in, p.batch, p.stride_a, p.m, p.k, 1, p.lda)
                                   : matrices(in, p.batch, p.stride_a, p.m, p.k, p.lda, 1);
  const memory::desc b = p.trans_b ? matrices(in, p.batch, p.stride_b, p.k, p.n, 1, p.ldb)
                                   : matrices(in, p.batch, p.stride_b, p.k, p.n, p.ldb, 1);
  const memory::desc c = matrices(memory::data_type::f32, p.batch, p.stride_c, p.m, p.n, p.ldc, 1);
  return {matmul_primitive(a, b, c, key.accumulate), memory(a, cpu_engine(), nullptr),
          memory(b, cpu_engine(), nullptr), memory(c, cpu_engine(), nullptr)};
}

// Each thread keeps its own primitives (and stream), so no lock is taken on the hot path. A
// program whose shapes keep changing would grow it without end: past kMaxCached it starts over.
constexpr std::size_t kMaxCached = 256;

Matmul& cached_matmul(const Key& key) {
  thread_local std::unordered_map<Key, Matmul, KeyHash> cache;
  if (const auto found = cache.find(key); found != cache.end()) return found->second;
  if (cache.size() >= kMaxCached) cache.clear();
  return cache.emplace(key, make_matmul(key)).first->second;
}

// Runs the cached product for `key` on a, b and c (read-only inputs: oneDNN takes void*).
void run(const Key& key, const void* a, const void* b, float* c) {
  pin_openmp_to_one_thread();
  Matmul& mm = cached_matmul(key);
  mm.src.set_data_handle(const_cast<void*>(a));
  mm.weights.set_data_handle(const_cast<void*>(b));
  mm.dst.set_data_handle(c);
  thread_local dnnl::stream stream(cpu_engine());
  mm.primitive.execute(stream, {{DNNL_ARG_SRC, mm.src}, {DNNL_ARG_WEIGHTS, mm.weights}, {DNNL_ARG_DST, mm.dst}});
  stream.wait();
}

}  // namespace

void onednn_sgemm(const StridedProducts& p, const float* a, const float* b, float beta, float* c) {
  run({p, beta != 0.0f, false}, a, b, c);
}

void onednn_bf16_gemm(const StridedProducts& p, const std::uint16_t* a, const std::uint16_t* b, float beta, float* c) {
  run({p, beta != 0.0f, true}, a, b, c);
}

bool onednn_has_bf16_matmul() {
  static const bool has = [] {
    pin_openmp_to_one_thread();
    const memory::desc halves({1, 16, 16}, memory::data_type::bf16, memory::format_tag::abc);
    const memory::desc floats({1, 16, 16}, memory::data_type::f32, memory::format_tag::abc);
    try {
      matmul_primitive(halves, halves, floats, false);
      return true;
    } catch (const dnnl::error&) {  // no bf16 kernel for this CPU: oneDNN says "unimplemented"
      return false;
    }
  }();
  return has;
}

}  // namespace tapegrad::kernels::detail
