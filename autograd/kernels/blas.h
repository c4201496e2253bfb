#pragma once
// Matrix products, row-major, through OpenBLAS's CBLAS or, for the float products it measured
// faster at, oneDNN's matmul (gemm_backend.h has the rule; callers never choose). The only
// translation unit that includes <cblas.h> is blas.cpp (it clashes with xtensor-blas's enums).
#include <cstddef>
#include <memory>
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

// In bf16 mode (matmul_precision.h) each product rounds its operands to bf16 before computing.
// While one of these is alive on a thread, products on that thread that read matrices stored in
// [source, source + size) round each of them once and reuse the copy: a product's output gradient
// is read by both of its operands' gradient products. The caller keeps those floats alive and
// unchanged while the scope lasts; nothing outside that range is kept (a temporary freed and
// reallocated at the same address must not find a stale copy). Nests (the innermost scope is the
// one consulted); costs nothing in float32.
class ReuseRoundedSource {
 public:
  ReuseRoundedSource(const float* source, std::size_t size);
  ~ReuseRoundedSource();
  ReuseRoundedSource(const ReuseRoundedSource&) = delete;
  ReuseRoundedSource& operator=(const ReuseRoundedSource&) = delete;

  // Matrices as blas.cpp's rounded copies read them: `count` matrices `stride` apart from `first`,
  // each `rows` rows of `cols` floats `ld` apart, rounded to bf16 bits (oneDNN) or to the floats
  // they stand for (OpenBLAS).
  struct Key {
    const float* first;
    std::size_t count, stride, rows, cols, ld;
    bool bits;
    bool operator==(const Key&) const = default;
  };
  bool covers(const float* x) const { return x >= begin_ && x < end_; }
  // The copy kept for `key` in this scope, or null.
  std::shared_ptr<const void> find(const Key& key) const;
  void keep(const Key& key, std::shared_ptr<const void> copy);

 private:
  const float* begin_;
  const float* end_;
  std::vector<std::pair<Key, std::shared_ptr<const void>>> copies_;
  ReuseRoundedSource* previous_;
};

}  // namespace tapegrad::kernels
