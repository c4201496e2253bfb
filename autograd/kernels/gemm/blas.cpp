#include "autograd/kernels/gemm/blas.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "autograd/kernels/gemm/bf16.h"
#include "autograd/kernels/gemm/blas_core.h"
#include "autograd/kernels/gemm/gemm_backend.h"
#include "autograd/kernels/gemm/onednn_matmul.h"
#include "autograd/kernels/gemm/small_gemm.h"
#include "autograd/base/spread.h"
#include "autograd/base/matmul_precision.h"

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

// Products [first, last) of p on the calling thread: one oneDNN call for all of them when
// `backend` says so (float only), tapegrad's small-product kernel, or one OpenBLAS call each.
template <class T>
void run_products(GemmBackend backend, const detail::StridedProducts& p, std::size_t first, std::size_t last, T alpha,
                  const T* a, const T* b, T beta, T* c) {
  if (backend == GemmBackend::kSmallProducts) {
    small_gemm_batched<T>(p, first, last, a, b, beta, c);
    return;
  }
#ifdef TAPEGRAD_ONEDNN
  if constexpr (std::is_same_v<T, float>) {
    if (backend == GemmBackend::kOneDnn && p.m > 0 && p.n > 0 && p.k > 0) {
      detail::StridedProducts part = p;
      part.batch = last - first;
      detail::onednn_sgemm(part, a + first * p.stride_a, b + first * p.stride_b, beta, c + first * p.stride_c);
      return;
    }
  }
#endif
  for (std::size_t i = first; i < last; ++i)
    gemm_serial(p.trans_a, p.trans_b, p.m, p.n, p.k, alpha, a + i * p.stride_a, p.lda, b + i * p.stride_b, p.ldb, beta,
                c + i * p.stride_c, p.ldc);
}

// The backend that computes these products in float32 or float64 (blas.h: callers never choose).
template <class T>
GemmBackend backend_for(std::size_t batch, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, T alpha,
                        T beta) {
  if constexpr (std::is_same_v<T, float>)
    return gemm_backend_for(batch, ta, tb, m, n, k, alpha, beta, MatmulPrecision::kFloat32);
  const bool small = alpha == T(1) && (beta == T(0) || beta == T(1)) && is_small_product(m, n, k);
  return small ? GemmBackend::kSmallProducts : GemmBackend::kOpenBlas;
}

// One product split into blocks (above): run(rows, cols, a_part, b_part, c_part) for each, in TBB
// tasks or one after another as the SpreadRule decides (base/spread.h), or once for the whole
// product when it is small. In is the type A and B are stored in.
template <class In, class Out, class Run>
void for_each_block(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const In* a,
                    std::size_t lda, const In* b, std::size_t ldb, Out* c, std::size_t ldc, const Run& run) {
  const bool split_rows = m >= n;
  const std::size_t extent = split_rows ? m : n;
  if (extent <= kMinBlock || m * n * k < kSplitThreshold) {
    run(m, n, a, b, c);
    return;
  }
  const std::size_t block = block_size(extent), blocks = (extent + block - 1) / block;
  const auto one_block = [&](std::size_t blk) {
    const std::size_t first = blk * block, size = std::min(block, extent - first);
    if (split_rows) {  // rows of op(A): rows of A, or its columns when transposed
      run(size, n, trans_a ? a + first : a + first * lda, b, c + first * ldc);
    } else {  // columns of op(B): columns of B, or its rows when transposed
      run(m, size, a, trans_b ? b + first * ldb : b + first, c + first);
    }
  };
  static SpreadRule rule;
  spread_indices(rule, m * n * k, blocks, one_block);
}

// A batch of products in fixed groups: run(first, last) for each group of products, in TBB tasks
// or one after another as the SpreadRule decides, or once on the calling thread when there is one
// group. Small products are grouped into tasks of
// at least kSplitThreshold multiply-adds, and a batch smaller than that runs on the calling
// thread: a task per [10,16]x[16,10] attention product cost more in scheduling than in
// arithmetic. The groups are fixed (per_task products each, the last one shorter), so a oneDNN
// call sees the same batches at any thread count.
template <class Run>
void for_each_group(std::size_t batch, std::size_t m, std::size_t n, std::size_t k, const Run& run) {
  const std::size_t work = std::max<std::size_t>(1, m * n * k);
  const std::size_t per_task = std::max<std::size_t>(1, kSplitThreshold / work);
  const std::size_t groups = (batch + per_task - 1) / per_task;
  const auto group = [&](std::size_t g) { run(g * per_task, std::min(batch, (g + 1) * per_task)); };
  if (groups == 1) {
    group(0);
    return;
  }
  static SpreadRule rule;
  spread_indices(rule, batch * work, groups, group);
}

// ---- bf16 mode (base/matmul_precision.h) ----

// A's or B's matrices rounded to bf16 once, before any split, densely in their stored layout
// (each [rows, cols], [cols, rows] when read transposed; one when shared by the batch): bf16 bits
// for oneDNN (E = std::uint16_t), or the floats they stand for, for OpenBLAS (E = float).
template <class E>
struct RoundedCopy {
  std::shared_ptr<const E[]> values;
  std::size_t ld, stride;
};

thread_local ReuseRoundedSource* active_reuse = nullptr;
thread_local std::size_t rounded_floats = 0;

template <class E>
RoundedCopy<E> rounded_copy(const float* x, std::size_t batch, std::size_t stride, bool transposed,
                            std::size_t op_rows, std::size_t op_cols, std::size_t ld) {
  const std::size_t rows = transposed ? op_cols : op_rows, cols = transposed ? op_rows : op_cols;
  const std::size_t count = stride == 0 ? 1 : batch;
  const std::size_t copy_stride = stride == 0 ? 0 : rows * cols;
  const ReuseRoundedSource::Key key{x, count, stride, rows, cols, ld, std::is_same_v<E, std::uint16_t>};
  if (auto kept = ReuseRoundedSource::find(key)) return {std::static_pointer_cast<const E[]>(kept), cols, copy_stride};
  auto values = std::make_shared_for_overwrite<E[]>(count * rows * cols);  // every element is written
  rounded_floats += count * rows * cols;
  constexpr std::size_t kRowsPerTask = 64;
  const auto round_rows = [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const std::size_t matrix = r / rows, row = r % rows;
      copy_rounded_to_bf16(x + matrix * stride + row * ld, cols, values.get() + r * cols);
    }
  };
  static SpreadRule rule;
  run_spread(
      rule, count * rows * cols, [&] { round_rows(0, count * rows); },
      [&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count * rows, kRowsPerTask),
                          [&](const tbb::blocked_range<std::size_t>& range) { round_rows(range.begin(), range.end()); });
      });
  ReuseRoundedSource::keep(key, values);
  return {std::move(values), cols, copy_stride};
}

// p's products in bf16: A and B rounded once, then computed from the copies, by oneDNN's bf16
// matmul (E = std::uint16_t) or OpenBLAS (E = float), in the float32 path's blocks (one product)
// or groups (a batch).
template <class E>
void products_in_bf16(const detail::StridedProducts& p, float alpha, const float* a, const float* b, float beta,
                      float* c) {
  const RoundedCopy<E> ra = rounded_copy<E>(a, p.batch, p.stride_a, p.trans_a, p.m, p.k, p.lda);
  const RoundedCopy<E> rb = rounded_copy<E>(b, p.batch, p.stride_b, p.trans_b, p.k, p.n, p.ldb);
  const detail::StridedProducts q{p.batch, p.trans_a, p.trans_b, p.m,  p.n,      p.k,
                                  ra.stride, ra.ld,   rb.stride, rb.ld, p.stride_c, p.ldc};
  const auto compute = [&](const detail::StridedProducts& part, const E* a_part, const E* b_part, float* c_part) {
    if constexpr (std::is_same_v<E, float>) {
      run_products<float>(GemmBackend::kOpenBlas, part, 0, part.batch, alpha, a_part, b_part, beta, c_part);
    } else {
      detail::onednn_bf16_gemm(part, a_part, b_part, beta, c_part);
    }
  };
  if (p.batch == 1) {
    for_each_block(q.trans_a, q.trans_b, q.m, q.n, q.k, ra.values.get(), q.lda, rb.values.get(), q.ldb, c, q.ldc,
                   [&](std::size_t rows, std::size_t cols, const E* a_part, const E* b_part, float* c_part) {
                     compute({1, q.trans_a, q.trans_b, rows, cols, q.k, 0, q.lda, 0, q.ldb, 0, q.ldc}, a_part, b_part,
                             c_part);
                   });
    return;
  }
  for_each_group(q.batch, q.m, q.n, q.k, [&](std::size_t first, std::size_t last) {
    detail::StridedProducts part = q;
    part.batch = last - first;
    compute(part, ra.values.get() + first * q.stride_a, rb.values.get() + first * q.stride_b,
            c + first * q.stride_c);
  });
}

// Whether the calling thread asks for these float products in bf16; they are then computed.
bool computed_in_bf16(const detail::StridedProducts& p, float alpha, const float* a, const float* b, float beta,
                      float* c) {
  if (matmul_precision() != MatmulPrecision::kBfloat16 || p.m == 0 || p.n == 0 || p.k == 0) return false;
#ifdef TAPEGRAD_ONEDNN
  if (gemm_backend_for(p.batch, p.trans_a, p.trans_b, p.m, p.n, p.k, alpha, beta, MatmulPrecision::kBfloat16) ==
      GemmBackend::kOneDnn) {
    products_in_bf16<std::uint16_t>(p, alpha, a, b, beta, c);
    return true;
  }
#endif
  products_in_bf16<float>(p, alpha, a, b, beta, c);
  return true;
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
          std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc) {
  (void)openblas_single_threaded;
  warn_once_if_blas_kernels_lag();
  if constexpr (std::is_same_v<T, float>) {
    if (computed_in_bf16({1, trans_a, trans_b, m, n, k, 0, lda, 0, ldb, 0, ldc}, alpha, a, b, beta, c)) return;
  }
  const GemmBackend backend = backend_for<T>(1, trans_a, trans_b, m, n, k, alpha, beta);
  for_each_block(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
                 [&](std::size_t rows, std::size_t cols, const T* a_part, const T* b_part, T* c_part) {
                   run_products<T>(backend, {1, trans_a, trans_b, rows, cols, k, 0, lda, 0, ldb, 0, ldc}, 0, 1, alpha,
                                   a_part, b_part, beta, c_part);
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
  const detail::StridedProducts p{batch, trans_a, trans_b, m, n, k, stride_a, lda, stride_b, ldb, stride_c, ldc};
  if constexpr (std::is_same_v<T, float>) {
    if (computed_in_bf16(p, alpha, a, b, beta, c)) return;
  }
  const GemmBackend backend = backend_for<T>(batch, trans_a, trans_b, m, n, k, alpha, beta);
  for_each_group(batch, m, n, k, [&](std::size_t first, std::size_t last) {
    run_products<T>(backend, p, first, last, alpha, a, b, beta, c);
  });
}

ReuseRoundedSource::ReuseRoundedSource(std::vector<std::span<const float>> sources, Copies kept)
    : sources_(std::move(sources)), copies_(std::move(kept)), outer_(active_reuse) {
  active_reuse = this;
}

ReuseRoundedSource::~ReuseRoundedSource() { active_reuse = outer_; }

std::size_t bf16_rounded_floats() { return rounded_floats; }

bool ReuseRoundedSource::covers(const Key& key) const {
  // Every float the key's matrices read (products with an empty extent never get here).
  const float* last = key.first + (key.count - 1) * key.stride + (key.rows - 1) * key.ld + key.cols - 1;
  return std::any_of(sources_.begin(), sources_.end(), [&](std::span<const float> source) {
    return key.first >= source.data() && last < source.data() + source.size();
  });
}

std::shared_ptr<const void> ReuseRoundedSource::find(const Key& key) {
  for (const ReuseRoundedSource* scope = active_reuse; scope; scope = scope->outer_) {
    if (!scope->covers(key)) continue;
    for (const auto& [kept_key, copy] : scope->copies_)
      if (kept_key == key) return copy;
  }
  return nullptr;
}

void ReuseRoundedSource::keep(const Key& key, const std::shared_ptr<const void>& copy) {
  for (ReuseRoundedSource* scope = active_reuse; scope; scope = scope->outer_)
    if (scope->covers(key)) scope->copies_.emplace_back(key, copy);
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
