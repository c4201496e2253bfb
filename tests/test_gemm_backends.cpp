// The backends behind kernels::gemm and gemm_batched (autograd/kernels/gemm/gemm_backend.h): each
// forced in turn onto every layout the ops use, against a float64 loop on the stored operands, in
// float32 and in bf16 (autograd/base/matmul_precision.h), where the loop reads the operands rounded;
// tapegrad's own small-product kernel (small_gemm.h) also called directly on every tail it has.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/base/errors.h"
#include "autograd/base/generator.h"
#include "autograd/core/tensor.h"
#include "autograd/kernels/gemm/bf16.h"
#include "autograd/kernels/gemm/blas.h"
#include "autograd/kernels/gemm/gemm_backend.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/gemm/small_gemm.h"
#include "autograd/base/matmul_precision.h"
#include "tests/support/thread_count.h"

namespace tapegrad {
namespace {

using kernels::GemmBackendGuard;
using kernels::GemmBackend;
using kernels::SimdLevel;

// batch products C_i = alpha op(A_i) op(B_i) + beta C_i on row-major operands; a stride of 0
// shares one matrix across the batch; ld_pad widens every leading dimension past its rows.
struct Layout {
  std::string name;
  std::size_t batch, m, n, k;
  bool shared_a, shared_b;
  std::size_t ld_pad;
  float alpha, beta;
};

struct Operands {
  std::size_t lda, ldb, ldc, stride_a, stride_b, stride_c;
  std::vector<float> a, b, c;
};

std::vector<float> uniform(std::size_t n, std::uint64_t seed) {
  Generator gen(seed);
  const auto t = Tensor<float>::uniform({n}, gen, -1.0f, 1.0f);
  return {t.value().begin(), t.value().end()};
}

Operands operands(const Layout& l, bool ta, bool tb) {
  Operands o;
  o.lda = (ta ? l.m : l.k) + l.ld_pad;
  o.ldb = (tb ? l.k : l.n) + l.ld_pad;
  o.ldc = l.n + l.ld_pad;
  o.stride_a = l.shared_a ? 0 : (ta ? l.k : l.m) * o.lda;
  o.stride_b = l.shared_b ? 0 : (tb ? l.n : l.k) * o.ldb;
  o.stride_c = l.m * o.ldc;
  o.a = uniform((l.shared_a ? 1 : l.batch) * (ta ? l.k : l.m) * o.lda, 1);
  o.b = uniform((l.shared_b ? 1 : l.batch) * (tb ? l.n : l.k) * o.ldb, 2);
  o.c = uniform(l.batch * o.stride_c, 3);  // what beta scales
  return o;
}

// The product in float64 with plain loops, read through the same strides; with each operand
// rounded to bf16 first when `rounded`. C is not read when beta is 0 (BLAS's rule).
std::vector<double> reference(const Layout& l, bool ta, bool tb, const Operands& o, bool rounded = false) {
  const auto read = [rounded](float v) { return double(rounded ? kernels::round_to_bf16(v) : v); };
  std::vector<double> c(o.c.begin(), o.c.end());
  for (std::size_t i = 0; i < l.batch; ++i)
    for (std::size_t r = 0; r < l.m; ++r)
      for (std::size_t col = 0; col < l.n; ++col) {
        double sum = 0;
        for (std::size_t p = 0; p < l.k; ++p) {
          const float x = o.a[i * o.stride_a + (ta ? p * o.lda + r : r * o.lda + p)];
          const float y = o.b[i * o.stride_b + (tb ? col * o.ldb + p : p * o.ldb + col)];
          sum += read(x) * read(y);
        }
        double& out = c[i * o.stride_c + r * o.ldc + col];
        out = l.alpha * sum + (l.beta == 0 ? 0.0 : l.beta * out);
      }
  return c;
}

std::vector<float> run(const Layout& l, bool ta, bool tb, Operands o) {
  if (l.batch == 1 && !l.shared_a && !l.shared_b) {
    kernels::gemm(ta, tb, l.m, l.n, l.k, l.alpha, o.a.data(), o.lda, o.b.data(), o.ldb, l.beta, o.c.data(), o.ldc);
  } else {
    kernels::gemm_batched(l.batch, ta, tb, l.m, l.n, l.k, l.alpha, o.a.data(), o.stride_a, o.lda, o.b.data(),
                          o.stride_b, o.ldb, l.beta, o.c.data(), o.stride_c, o.ldc);
  }
  return o.c;
}

// The copy-task step's kinds of product, small enough for a loop reference: one GEMM below the
// split threshold, one split into row blocks and one into column blocks (blas.cpp), batches of
// attention products (grouped into several TBB tasks), a weight shared by a batch (einsum's
// projections), either operand shared, padded leading dimensions, accumulation into C (linear's
// bias), and an alpha only OpenBLAS takes.
const std::vector<Layout> kLayouts = {
    {"single", 1, 20, 30, 40, false, false, 0, 1, 0},
    {"row blocks", 1, 300, 70, 130, false, false, 0, 1, 0},
    {"column blocks", 1, 70, 300, 130, false, false, 0, 1, 0},
    {"attention batch", 200, 10, 10, 16, false, false, 0, 1, 0},
    {"shared weight", 6, 40, 16, 64, false, true, 0, 1, 0},
    {"shared left", 6, 16, 40, 64, true, false, 0, 1, 0},
    {"padded", 3, 17, 23, 29, false, false, 5, 1, 0},
    {"accumulate", 1, 33, 65, 31, false, false, 0, 1, 1},
    {"accumulate batch", 4, 9, 10, 16, false, false, 2, 1, 1},
    {"alpha", 2, 8, 9, 10, false, false, 0, 2, 0.5f},
};

template <class T>
double largest_difference(const std::vector<T>& got, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  return worst;
}

void expect_matches_reference(GemmBackend backend, MatmulPrecision precision = MatmulPrecision::kFloat32) {
  const GemmBackendGuard force(backend);
  const MatmulPrecisionGuard mode(precision);
  const bool bf16 = precision == MatmulPrecision::kBfloat16;
  for (const Layout& l : kLayouts)
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        SCOPED_TRACE(l.name + (ta ? " A^T" : " A") + (tb ? " B^T" : " B"));
        const Operands o = operands(l, ta, tb);
        const std::vector<float> got = run(l, ta, tb, o);
        // float rounding of k products of numbers below 1, summed in any order
        EXPECT_LT(largest_difference(got, reference(l, ta, tb, o, bf16)), 1e-6 * double(l.k) + 1e-6);
        // bf16 keeps 8 bits of each input: its products stray from float's by far more than that
        if (bf16) {
          EXPECT_GT(largest_difference(got, reference(l, ta, tb, o)), 1e-4);
        }
      }
}

#define SKIP_WITHOUT_ONEDNN() \
  if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN (TAPEGRAD_ONEDNN off)"

TEST(GemmBackends, OpenBlasMatchesFloat64ReferenceOnEveryLayout) { expect_matches_reference(GemmBackend::kOpenBlas); }

// Forced, the small-product kernel takes the layouts small enough for it (the attention batch, the
// padded and accumulated batches); the others follow the rule.
TEST(GemmBackends, SmallProductsMatchFloat64ReferenceOnEveryLayout) {
  expect_matches_reference(GemmBackend::kSmallProducts);
}

// The products as small_gemm.h defines their bits: each element a chain of fused multiply-adds over
// k in order, starting from 0, then (beta 1) plus C's element. Padding is left as it was.
// o gives the strides; a, b and c its operands in T.
template <class T>
std::vector<T> sequential_fma(const Layout& l, bool ta, bool tb, const Operands& o, const std::vector<T>& a,
                              const std::vector<T>& b, std::vector<T> c) {
  for (std::size_t i = 0; i < l.batch; ++i)
    for (std::size_t r = 0; r < l.m; ++r)
      for (std::size_t col = 0; col < l.n; ++col) {
        T sum = 0;
        for (std::size_t p = 0; p < l.k; ++p)
          sum = std::fma(a[i * o.stride_a + (ta ? p * o.lda + r : r * o.lda + p)],
                         b[i * o.stride_b + (tb ? col * o.ldb + p : p * o.ldb + col)], sum);
        T& out = c[i * o.stride_c + r * o.ldc + col];
        out = l.beta == 0 ? sum : sum + out;
      }
  return c;
}

template <class T>
bool same_bits(const std::vector<T>& x, const std::vector<T>& y) {
  // (memcmp must not see the null data of an empty vector)
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0);
}

// small_gemm_batched called directly, in float and double, on every tail of its blocks: rows not a
// multiple of its row blocks (4 rows with AVX2, 12 with AVX-512), columns not a multiple of a
// vector or of two, k of 0 and 1, an extent of 0, the largest extent it takes, every transpose,
// beta 0 over C full of NaN (not read) and beta 1, leading dimensions padded by 3 whose padding
// must stay as it was, and A or B shared by the batch (a shared B is packed once).
// Every bit is the header's promise: each element the fused multiply-adds over k in order from 0
// (then plus C with beta 1), whatever the blocks, the vector width or the masked lanes.
TEST(GemmBackends, SmallKernelMatchesFloat64ReferenceOnEveryTail) {
  struct Shape {
    std::size_t m, n, k;
  };
  const std::vector<Shape> shapes = {{1, 1, 1},  {5, 9, 3},    {4, 16, 8}, {7, 17, 13}, {10, 10, 8}, {3, 33, 0},
                                     {0, 5, 5},  {6, 0, 2},    {2, 24, 1}, {64, 16, 4}, {9, 64, 7}, {64, 1, 64},
                                     {13, 40, 5}, {12, 48, 3}, {25, 40, 4}, {10, 10, 16}, {16, 16, 16}};
  struct Sharing {
    bool a, b;
  };
  for (const Shape& shape : shapes)
    for (const Sharing shared : {Sharing{false, false}, Sharing{true, false}, Sharing{false, true}})
      for (const float beta : {0.0f, 1.0f})
        for (const bool ta : {false, true})
          for (const bool tb : {false, true}) {
            const Layout l{"direct", 3, shape.m, shape.n, shape.k, shared.a, shared.b, 3, 1, beta};
            SCOPED_TRACE(std::to_string(l.m) + "x" + std::to_string(l.n) + "x" + std::to_string(l.k) + " beta " +
                         std::to_string(beta) + (ta ? " A^T" : " A") + (tb ? " B^T" : " B") +
                         (shared.a ? " shared A" : "") + (shared.b ? " shared B" : ""));
            ASSERT_TRUE(kernels::is_small_product(l.m, l.n, l.k));
            Operands o = operands(l, ta, tb);
            if (beta == 0) {  // NaN in C's elements (not its padding): a kernel that reads them shows it
              for (std::size_t i = 0; i < l.batch; ++i)
                for (std::size_t r = 0; r < l.m; ++r)
                  std::fill_n(o.c.begin() + i * o.stride_c + r * o.ldc, l.n, std::nanf(""));
            }
            const std::vector<double> want = reference(l, ta, tb, o);
            const kernels::detail::StridedProducts p{l.batch,    ta,    tb,         l.m,   l.n,        l.k,
                                                     o.stride_a, o.lda, o.stride_b, o.ldb, o.stride_c, o.ldc};
            std::vector<float> got = o.c;
            kernels::small_gemm_batched<float>(p, 0, l.batch, o.a.data(), o.b.data(), beta, got.data());
            EXPECT_LT(largest_difference(got, want), 1e-6 * double(l.k) + 1e-6);
            // float products are exact in double: only the sums' rounding is left
            const std::vector<double> a(o.a.begin(), o.a.end()), b(o.b.begin(), o.b.end());
            std::vector<double> got_double(o.c.begin(), o.c.end());
            kernels::small_gemm_batched<double>(p, 0, l.batch, a.data(), b.data(), beta, got_double.data());
            EXPECT_LT(largest_difference(got_double, want), 1e-14 * double(l.k + 1));
            EXPECT_TRUE(same_bits(got, sequential_fma(l, ta, tb, o, o.a, o.b, o.c)));
            const std::vector<double> c_double(o.c.begin(), o.c.end());
            EXPECT_TRUE(same_bits(got_double, sequential_fma(l, ta, tb, o, a, b, c_double)));
          }
}

TEST(GemmBackends, OneDnnMatchesFloat64ReferenceOnEveryLayout) {
  SKIP_WITHOUT_ONEDNN();
  expect_matches_reference(GemmBackend::kOneDnn);
}

#define SKIP_WITHOUT_ONEDNN_BF16()                                                                    \
  SKIP_WITHOUT_ONEDNN();                                                                              \
  if (!kernels::onednn_bf16_available()) GTEST_SKIP() << "oneDNN has no bf16 matmul for this CPU"

TEST(GemmBackends, OpenBlasInBf16MatchesFloat64ReferenceOnRoundedInputs) {
  expect_matches_reference(GemmBackend::kOpenBlas, MatmulPrecision::kBfloat16);
}

TEST(GemmBackends, OneDnnInBf16MatchesFloat64ReferenceOnRoundedInputs) {
  SKIP_WITHOUT_ONEDNN_BF16();
  expect_matches_reference(GemmBackend::kOneDnn, MatmulPrecision::kBfloat16);
}

// Inside a kernels::ReuseRoundedSource scope, products reading the covered floats reuse the copy
// the first of them rounded, whether they read it as A or transposed (linear's output gradient is
// read both ways). Shown by changing the floats between two products, which callers must not do:
// the second product still computes from the old values. An operand outside the covered range,
// and any product after the scope, is rounded afresh.
void expect_covered_source_rounded_once(GemmBackend backend) {
  const GemmBackendGuard force(backend);
  const MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
  constexpr std::size_t m = 96, k = 64, n = 80;
  std::vector<float> g = uniform(m * k, 1), w = uniform(k * n, 2), x = uniform(m * n, 3);
  const auto times_w = [&](std::vector<float>& out) {  // g [m, k] w [k, n]
    out.assign(m * n, 0.0f);
    kernels::gemm(false, false, m, n, k, 1.0f, g.data(), k, w.data(), n, 0.0f, out.data(), n);
  };
  const auto transposed_times_x = [&](std::vector<float>& out) {  // g^T [k, m] x [m, n]
    out.assign(k * n, 0.0f);
    kernels::gemm(true, false, k, n, m, 1.0f, g.data(), k, x.data(), n, 0.0f, out.data(), n);
  };
  std::vector<float> before_w, before_x, reused_w, reused_x, fresh_w, after_w;
  times_w(before_w);
  transposed_times_x(before_x);
  const std::vector<float> original_g = g, original_w = w;
  {
    const kernels::ReuseRoundedSource reuse({std::span<const float>(g)});
    times_w(reused_w);  // rounds g, kept
    for (float& v : g) v = v * 0.5f + 0.25f;
    transposed_times_x(reused_x);  // g read transposed: the same stored matrix, the kept copy
    EXPECT_EQ(reused_x, before_x);
    for (float& v : w) v = -v;  // w is not covered: rounded afresh
    times_w(fresh_w);
    for (std::size_t i = 0; i < fresh_w.size(); ++i) ASSERT_EQ(fresh_w[i], -reused_w[i]) << i;
  }
  EXPECT_EQ(reused_w, before_w);
  w = original_w;
  times_w(after_w);  // the scope is gone: g's new values are read
  EXPECT_NE(after_w, before_w);
  g = original_g;
  times_w(after_w);
  EXPECT_EQ(after_w, before_w);
}

TEST(GemmBackends, OpenBlasInBf16RoundsACoveredSourceOncePerScope) {
  expect_covered_source_rounded_once(GemmBackend::kOpenBlas);
}

TEST(GemmBackends, OneDnnInBf16RoundsACoveredSourceOncePerScope) {
  SKIP_WITHOUT_ONEDNN_BF16();
  expect_covered_source_rounded_once(GemmBackend::kOneDnn);
}

void expect_same_bits_at_any_thread_count(GemmBackend backend, MatmulPrecision precision) {
  const testing_support::ThreadCountTest thread_count_test;
  const GemmBackendGuard force(backend);
  const MatmulPrecisionGuard mode(precision);
  for (const Layout& l : {kLayouts[1], kLayouts[2], kLayouts[3]}) {
    SCOPED_TRACE(l.name);
    const Operands o = operands(l, false, true);
    set_num_threads(1);
    const std::vector<float> one = run(l, false, true, o);
    set_num_threads(2);
    const std::vector<float> two = run(l, false, true, o);
    EXPECT_EQ(one, two);
  }
}

TEST(GemmBackends, OneDnnSameBitsAtAnyThreadCount) {
  SKIP_WITHOUT_ONEDNN();
  expect_same_bits_at_any_thread_count(GemmBackend::kOneDnn, MatmulPrecision::kFloat32);
}

TEST(GemmBackends, SmallProductsSameBitsAtAnyThreadCount) {
  expect_same_bits_at_any_thread_count(GemmBackend::kSmallProducts, MatmulPrecision::kFloat32);
}

TEST(GemmBackends, Bf16SameBitsAtAnyThreadCount) {
  expect_same_bits_at_any_thread_count(GemmBackend::kOpenBlas, MatmulPrecision::kBfloat16);
  if (kernels::onednn_bf16_available())
    expect_same_bits_at_any_thread_count(GemmBackend::kOneDnn, MatmulPrecision::kBfloat16);
}

std::size_t threads_in_process() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

// oneDNN runs its loops on OpenMP, whose teams would add threads beside TBB's in every thread that
// calls it. OpenMP keeps a team per calling thread, so a thread that has never called it runs the
// products (big ones split over TBB tasks on 2 threads, and a batch): while it is alive the process
// must have no more threads than before plus itself.
TEST(GemmBackends, OneDnnStartsNoThreadsOfItsOwn) {
  const testing_support::ThreadCountTest thread_count_test;
  SKIP_WITHOUT_ONEDNN();
  set_num_threads(2);
  const Layout big{"big", 1, 512, 256, 256, false, false, 0, 1, 0};
  const Layout many{"many", 400, 10, 10, 16, false, false, 0, 1, 0};
  {
    const GemmBackendGuard force(GemmBackend::kOpenBlas);  // TBB's worker starts here
    run(big, false, false, operands(big, false, false));
  }
  const std::size_t before = threads_in_process();
  std::size_t during = 0;
  {
    const GemmBackendGuard force(GemmBackend::kOneDnn);
    std::thread caller([&] {
      for (int repeat = 0; repeat < 5; ++repeat) {
        run(big, false, false, operands(big, false, false));
        run(many, false, true, operands(many, false, true));
      }
      during = threads_in_process();
    });
    caller.join();
  }
  EXPECT_EQ(during, before + 1);
}

TEST(GemmBackends, RuleFollowsTheMeasuredShapeClasses) {
  const auto rule = [](std::size_t batch, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k) {
    return kernels::preferred_gemm_backend(batch, ta, tb, m, n, k, MatmulPrecision::kFloat32, SimdLevel::kAvx512);
  };
  constexpr GemmBackend openblas = GemmBackend::kOpenBlas, onednn = GemmBackend::kOneDnn;
  EXPECT_EQ(rule(1, false, false, 800, 512, 2048), onednn);   // paper dX = G W
  EXPECT_EQ(rule(1, true, false, 512, 512, 800), onednn);     // paper dW = G^T X
  EXPECT_EQ(rule(8, false, false, 800, 64, 512), onednn);     // paper per-head projections
  EXPECT_EQ(rule(1, false, true, 800, 2048, 512), openblas);  // linear's forward
  EXPECT_EQ(rule(1, false, false, 320, 64, 64), openblas);    // tiny layers
  EXPECT_EQ(rule(4, false, false, 320, 16, 64), openblas);    // tiny per-head projections
  EXPECT_EQ(rule(80, false, true, 128, 128, 16), onednn);     // scores at d_k 16, 128 tokens
  EXPECT_EQ(rule(80, false, true, 128, 128, 64), openblas);   // scores at d_k 64, 128 tokens
  EXPECT_EQ(rule(640, false, true, 10, 10, 64), openblas);    // scores at d_k 64
  EXPECT_EQ(rule(640, false, false, 10, 64, 10), openblas);   // attention times values at d_k 64
}

// Attention's per-(batch, head) products at the copy task's sizes go to tapegrad's own kernel, in
// every layout, on every CPU; in bf16 they keep the bf16 rule.
TEST(GemmBackends, RuleGivesTinyProductsToTheSmallKernel) {
  constexpr GemmBackend small = GemmBackend::kSmallProducts;
  for (const SimdLevel cpu : {SimdLevel::kAvx512, SimdLevel::kAvx2, SimdLevel::kUnknown}) {
    const auto rule = [cpu](std::size_t batch, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k) {
      return kernels::preferred_gemm_backend(batch, ta, tb, m, n, k, MatmulPrecision::kFloat32, cpu);
    };
    EXPECT_EQ(rule(128, false, true, 10, 10, 16), small);   // scores at d_k 16
    EXPECT_EQ(rule(128, false, false, 10, 16, 10), small);  // attention times values
    EXPECT_EQ(rule(128, true, false, 10, 16, 10), small);   // the values' gradient
    EXPECT_EQ(rule(320, false, true, 10, 10, 8), small);    // the copy task's scores (d_k 8)
    EXPECT_NE(rule(640, false, true, 10, 10, 64), small);   // scores at d_k 64: 6400 multiply-adds
    EXPECT_EQ(rule(1, false, false, 4, 3, 5), small);       // one tiny product
    EXPECT_NE(rule(8, false, false, 65, 2, 2), small);       // an extent above 64
  }
  EXPECT_EQ(kernels::preferred_gemm_backend(128, false, true, 10, 10, 16, MatmulPrecision::kBfloat16,
                                            SimdLevel::kAvx512),
            GemmBackend::kOneDnn);
  EXPECT_TRUE(kernels::is_small_product(64, 8, 8));
  EXPECT_FALSE(kernels::is_small_product(64, 8, 9));  // 4608 multiply-adds
  EXPECT_FALSE(kernels::is_small_product(1, 1, 65));
}

// Without AVX-512, oneDNN's f32 matmul was slower than OpenBLAS on the step's large products, which
// the AVX-512 rule gives it; the narrow scores stay.
TEST(GemmBackends, RuleKeepsLargeProductsOnOpenBlasWithoutAvx512) {
  for (const SimdLevel cpu : {SimdLevel::kAvx2, SimdLevel::kAvx, SimdLevel::kSse, SimdLevel::kUnknown}) {
    const auto rule = [cpu](std::size_t batch, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k) {
      return kernels::preferred_gemm_backend(batch, ta, tb, m, n, k, MatmulPrecision::kFloat32, cpu);
    };
    EXPECT_EQ(rule(1, false, false, 800, 512, 2048), GemmBackend::kOpenBlas);  // paper dX = G W
    EXPECT_EQ(rule(1, true, false, 512, 512, 800), GemmBackend::kOpenBlas);    // paper dW = G^T X
    EXPECT_EQ(rule(8, false, false, 800, 64, 512), GemmBackend::kOpenBlas);    // paper per-head projections
    EXPECT_EQ(rule(80, false, true, 128, 128, 16), GemmBackend::kOneDnn);      // scores at d_k 16, 128 tokens
  }
}

TEST(GemmBackends, Bf16RuleFollowsTheMeasuredShapeClasses) {
  const auto rule = [](std::size_t batch, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k) {
    return kernels::preferred_gemm_backend(batch, ta, tb, m, n, k, MatmulPrecision::kBfloat16, SimdLevel::kAvx512);
  };
  constexpr GemmBackend openblas = GemmBackend::kOpenBlas, onednn = GemmBackend::kOneDnn;
  EXPECT_EQ(rule(1, false, true, 800, 2048, 512), onednn);   // linear's forward
  EXPECT_EQ(rule(1, false, false, 320, 64, 64), onednn);     // tiny layers' dX
  EXPECT_EQ(rule(4, true, false, 64, 16, 320), onednn);      // tiny per-head projections' dW
  EXPECT_EQ(rule(128, false, true, 10, 10, 16), onednn);     // scores at d_k 16
  EXPECT_EQ(rule(640, false, true, 10, 10, 64), openblas);   // scores at d_k 64
  EXPECT_EQ(rule(640, false, false, 10, 64, 10), openblas);  // attention times values
}

TEST(GemmBackends, OnlyScalarsOneDnnTakesReachIt) {
  const auto chosen = [](float alpha, float beta) {
    return kernels::gemm_backend_for(1, false, false, 800, 512, 2048, alpha, beta, MatmulPrecision::kFloat32);
  };
  // Unforced, the rule for this CPU's level.
  const GemmBackend ruled = kernels::preferred_gemm_backend(1, false, false, 800, 512, 2048, MatmulPrecision::kFloat32,
                                                            kernels::cpu_simd_level());
  EXPECT_EQ(chosen(1, 0), kernels::onednn_available() ? ruled : GemmBackend::kOpenBlas);
  EXPECT_EQ(chosen(2, 0), GemmBackend::kOpenBlas);
  if (!kernels::onednn_available()) return;
  // Forced onto oneDNN, the scalars it takes still reach it and the others still do not.
  const GemmBackendGuard force(GemmBackend::kOneDnn);
  EXPECT_EQ(chosen(1, 0), GemmBackend::kOneDnn);
  EXPECT_EQ(chosen(1, 1), GemmBackend::kOneDnn);
  EXPECT_EQ(chosen(2, 0), GemmBackend::kOpenBlas);
  EXPECT_EQ(chosen(1, 0.5f), GemmBackend::kOpenBlas);
  const GemmBackendGuard force_openblas(GemmBackend::kOpenBlas);  // the innermost force wins
  EXPECT_EQ(chosen(1, 0), GemmBackend::kOpenBlas);
}

TEST(GemmBackends, ForcingOneDnnNeedsABuildWithIt) {
  if (kernels::onednn_available()) {
    EXPECT_NO_THROW(GemmBackendGuard{GemmBackend::kOneDnn});
  } else {
    EXPECT_THROW(GemmBackendGuard{GemmBackend::kOneDnn}, ValueError);
  }
}

}  // namespace
}  // namespace tapegrad
