#include "autograd/kernels/onednn_matmul.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

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

// [batch, rows, cols] floats with the given row and column strides; a batch stride of 0 (one
// matrix shared by the batch) becomes a batch of 1, which oneDNN broadcasts.
memory::desc matrices(std::size_t batch, std::size_t batch_stride, std::size_t rows, std::size_t cols,
                      std::size_t row_stride, std::size_t col_stride) {
  const std::size_t span = rows * row_stride + cols * col_stride;  // any stride past one matrix
  return memory::desc({batch_stride == 0 ? 1 : dim(batch), dim(rows), dim(cols)}, memory::data_type::f32,
                      {dim(batch_stride == 0 ? span : batch_stride), dim(row_stride), dim(col_stride)});
}

// The same matrices as bf16, dense, each stored in the order the float ones are (row-major, or
// column-major when read transposed), so that converting them reads and writes memory in order.
memory::desc dense_bf16(const memory::desc& floats, bool transposed) {
  return memory::desc(floats.dims(), memory::data_type::bf16,
                      transposed ? memory::format_tag::acb : memory::format_tag::abc);
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

// An operand converted to bf16 before the product: the float matrices as stored, their bf16
// copy's layout, and the reorder that rounds one into the other.
struct Bf16Operand {
  memory floats, halves;
  dnnl::reorder convert;
};

Bf16Operand make_bf16_operand(const memory::desc& floats, bool transposed) {
  memory f(floats, cpu_engine(), nullptr), h(dense_bf16(floats, transposed), cpu_engine(), nullptr);
  return {f, h, dnnl::reorder(f, h)};
}

// A primitive and its memory objects, made once per layout and reused with new data pointers
// (creating a primitive descriptor costs tens of microseconds, more than a small product). In
// bf16, src and weights are the bf16 copies of A and B.
struct Matmul {
  dnnl::matmul primitive;
  memory src, weights, dst;
  std::optional<Bf16Operand> a16, b16;
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
  // op(A) is [m, k]: A as stored is [m, k] (strides lda, 1) or [k, m] read transposed (1, lda).
  const memory::desc a = p.trans_a ? matrices(p.batch, p.stride_a, p.m, p.k, 1, p.lda)
                                   : matrices(p.batch, p.stride_a, p.m, p.k, p.lda, 1);
  const memory::desc b = p.trans_b ? matrices(p.batch, p.stride_b, p.k, p.n, 1, p.ldb)
                                   : matrices(p.batch, p.stride_b, p.k, p.n, p.ldb, 1);
  const memory::desc c = matrices(p.batch, p.stride_c, p.m, p.n, p.ldc, 1);
  memory dst(c, cpu_engine(), nullptr);
  if (!key.bf16)
    return {matmul_primitive(a, b, c, key.accumulate), memory(a, cpu_engine(), nullptr),
            memory(b, cpu_engine(), nullptr), dst, std::nullopt, std::nullopt};
  Bf16Operand a16 = make_bf16_operand(a, p.trans_a), b16 = make_bf16_operand(b, p.trans_b);
  return {matmul_primitive(a16.halves.get_desc(), b16.halves.get_desc(), c, key.accumulate), a16.halves, b16.halves,
          dst, a16, b16};
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

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

// Rounds the float matrices at `floats` into this thread's `scratch`, which the product then reads.
void convert_to_bf16(Bf16Operand& operand, const float* floats, std::vector<std::uint16_t>& scratch) {
  scratch.resize(operand.halves.get_desc().get_size() / sizeof(std::uint16_t));
  operand.floats.set_data_handle(const_cast<float*>(floats));  // read only: oneDNN takes void*
  operand.halves.set_data_handle(scratch.data());
  operand.convert.execute(thread_stream(), operand.floats, operand.halves);
}

void run(Matmul& mm, float* c) {
  mm.dst.set_data_handle(c);
  mm.primitive.execute(thread_stream(),
                       {{DNNL_ARG_SRC, mm.src}, {DNNL_ARG_WEIGHTS, mm.weights}, {DNNL_ARG_DST, mm.dst}});
  thread_stream().wait();
}

}  // namespace

void onednn_sgemm(const StridedProducts& p, const float* a, const float* b, float beta, float* c) {
  pin_openmp_to_one_thread();
  Matmul& mm = cached_matmul({p, beta != 0.0f, false});
  mm.src.set_data_handle(const_cast<float*>(a));  // read only: oneDNN takes void*
  mm.weights.set_data_handle(const_cast<float*>(b));
  run(mm, c);
}

void onednn_bf16_gemm(const StridedProducts& p, const float* a, const float* b, float beta, float* c) {
  pin_openmp_to_one_thread();
  Matmul& mm = cached_matmul({p, beta != 0.0f, true});
  thread_local std::vector<std::uint16_t> a_scratch, b_scratch;
  convert_to_bf16(*mm.a16, a, a_scratch);
  convert_to_bf16(*mm.b16, b, b_scratch);
  run(mm, c);
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
