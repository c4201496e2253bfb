#pragma once
// Matrix products, row-major, through OpenBLAS's CBLAS or, for the float products it measured
// faster at, oneDNN's matmul (gemm_backend.h has the rule; callers never choose). The only
// translation unit that includes <cblas.h> is blas.cpp (it clashes with xtensor-blas's enums).
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace tapegrad::kernels {

// C[m,n] = alpha * op(A) * op(B) + beta * C, where op(X) is X or X^T. lda/ldb/ldc are the row
// strides of A, B, C as stored. Large products are split along their longer output side into a
// few fixed blocks run by TBB, so the result is the same bit for bit at any thread count.
template <class T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
          std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc);

// batch independent products C_i = alpha * op(A_i) op(B_i) + beta * C_i with A_i = a + i*stride_a
// (and so on); a stride of 0 shares one matrix across the batch. TBB runs the batch in parallel.
template <class T>
void gemm_batched(std::size_t batch, bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha,
                  const T* a, std::size_t stride_a, std::size_t lda, const T* b, std::size_t stride_b, std::size_t ldb,
                  T beta, T* c, std::size_t stride_c, std::size_t ldc);

// How many floats products on this thread have rounded to bf16 so far (base/matmul_precision.h), each
// copy counted once however often it is reused: for tests and benchmarks.
std::size_t bf16_rounded_floats();

// In bf16 mode (base/matmul_precision.h) each product rounds its operands to bf16 before computing.
// While one of these is alive on a thread, products on that thread that read matrices stored in
// one of its `sources` round each of them once and reuse the copy: a product's output gradient is
// read by both of its operands' gradient products, and a product's operands by its forward and
// its backward. The caller keeps those floats alive and unchanged while the scope lasts, and
// while the copies it hands on (copies()) are used; nothing outside the sources is kept (a
// temporary freed and reallocated at the same address must not find a stale copy). Scopes nest:
// a copy is kept by every scope covering its operand. Costs nothing in float32.
class ReuseRoundedSource {
 public:
  // Matrices as blas.cpp's rounded copies read them: `count` matrices `stride` apart from `first`,
  // each `rows` rows of `cols` floats `ld` apart, rounded to bf16 bits (oneDNN) or to the floats
  // they stand for (OpenBLAS).
  struct Key {
    const float* first;
    std::size_t count, stride, rows, cols, ld;
    bool bits;
    bool operator==(const Key&) const = default;
  };
  using Copies = std::vector<std::pair<Key, std::shared_ptr<const void>>>;

  // `kept`: copies an earlier scope over the same floats made, still valid (they are unchanged).
  explicit ReuseRoundedSource(std::vector<std::span<const float>> sources, Copies kept = {});
  ~ReuseRoundedSource();
  ReuseRoundedSource(const ReuseRoundedSource&) = delete;
  ReuseRoundedSource& operator=(const ReuseRoundedSource&) = delete;

  // Every copy this scope holds, the kept ones and those made in it.
  const Copies& copies() const { return copies_; }

  // For blas.cpp: the copy of `key` held by a scope whose sources hold all of the key's matrices
  // (the innermost first), or null; and a new copy handed to every such scope.
  static std::shared_ptr<const void> find(const Key& key);
  static void keep(const Key& key, const std::shared_ptr<const void>& copy);

 private:
  bool covers(const Key& key) const;

  std::vector<std::span<const float>> sources_;
  Copies copies_;
  ReuseRoundedSource* outer_;
};

}  // namespace tapegrad::kernels
