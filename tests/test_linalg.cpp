#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

#include "autograd/kernels/gemm/blas_core.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops/linalg.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

namespace tapegrad {
namespace {

// torch.matmul with plain loops: a 1-D a is [1, k] and a 1-D b is [k, 1] (those axes dropped
// from the result); batch axes are right-aligned and a size-1 or missing axis repeats.
xt::xarray<double> naive_matmul(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  Shape sa(a.shape().begin(), a.shape().end()), sb(b.shape().begin(), b.shape().end());
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const std::size_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Shape a_batch(sa.begin(), sa.end() - 2), b_batch(sb.begin(), sb.end() - 2);
  const std::size_t nb = std::max(a_batch.size(), b_batch.size());
  // Batch axis d of the result, as seen by an operand with `own` batch axes: its size there.
  const auto own_size = [nb](const Shape& own, std::size_t d) {
    return d < nb - own.size() ? 1 : own[d - (nb - own.size())];
  };
  Shape batch(nb);
  for (std::size_t d = 0; d < nb; ++d) batch[d] = std::max(own_size(a_batch, d), own_size(b_batch, d));
  std::size_t count = 1;
  for (std::size_t s : batch) count *= s;
  std::vector<double> out(count * m * n, 0.0);
  for (std::size_t flat = 0; flat < count; ++flat) {
    // Unravel the batch index and find each operand's matrix.
    std::size_t rest = flat, a_mat = 0, b_mat = 0, a_scale = 1, b_scale = 1;
    for (std::size_t d = nb; d-- > 0;) {
      const std::size_t i = rest % batch[d];
      rest /= batch[d];
      const std::size_t as = own_size(a_batch, d), bs = own_size(b_batch, d);
      a_mat += (as == 1 ? 0 : i) * a_scale;
      b_mat += (bs == 1 ? 0 : i) * b_scale;
      a_scale *= as;
      b_scale *= bs;
    }
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t p = 0; p < k; ++p)
          out[(flat * m + i) * n + j] += a.data()[(a_mat * m + i) * k + p] * b.data()[(b_mat * k + p) * n + j];
  }
  Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(m);
  if (!b_vec) out_shape.push_back(n);
  xt::xarray<double> result = xt::zeros<double>(out_shape);
  std::copy(out.begin(), out.end(), result.data());
  return result;
}

// Every torch.matmul case: vector/matrix combinations, batches on either side, broadcasting
// (missing axes, size-1 axes, both operands broadcast along different axes), size-1 matrices.
const std::vector<std::pair<Shape, Shape>> kMatmulShapes = {
    {{3}, {3}},          {{2, 3}, {3}},         {{3}, {3, 4}},          {{2, 3}, {3, 4}},
    {{2, 1, 3, 4}, {5, 4, 2}}, {{4, 2, 3}, {3, 5}}, {{2, 3}, {4, 3, 2}},  {{3}, {2, 3, 4}},
    {{2, 3, 4}, {4}},    {{2, 2, 3}, {2, 3, 2}}, {{3, 1, 2}, {1, 2, 4}}, {{1, 2, 3}, {4, 3, 2}},
    {{2, 1, 2, 3}, {1, 3, 3, 2}}, {{1, 3}, {3, 1}}, {{1}, {1, 1}},      {{2, 1, 1, 3}, {3}},
};

TEST(Matmul, NaiveReferenceSelfCheck) {
  EXPECT_EQ(naive_matmul(xt::xarray<double>{{1, 2}, {3, 4}}, xt::xarray<double>{{5, 6}, {7, 8}}),
            (xt::xarray<double>{{19, 22}, {43, 50}}));
  EXPECT_EQ(naive_matmul(xt::xarray<double>{1, 2}, xt::xarray<double>{3, 4}), xt::xarray<double>(11.0));
}

TEST(Matmul, HandComputed) {
  Tensor<double> a(xt::xarray<double>{{1, 2}, {3, 4}});
  Tensor<double> v(xt::xarray<double>{1, -1});
  EXPECT_EQ(matmul(a, v).value(), (xt::xarray<double>{-1, -1}));
  EXPECT_EQ(matmul(v, a).value(), (xt::xarray<double>{-2, -2}));
  EXPECT_EQ(matmul(v, v).value(), xt::xarray<double>(2.0));
}

TEST(Matmul, MatchesNaiveReferenceOverAllShapeCases) {
  for (const auto& [sa, sb] : kMatmulShapes) {
    SCOPED_TRACE(format_shape(sa) + " x " + format_shape(sb));
    const auto a = random_tensor(sa, 1), b = random_tensor(sb, 2);
    const auto got = matmul(a, b).value();
    EXPECT_LT(max_abs_diff(got, naive_matmul(a.value(), b.value())), 1e-12);
  }
}

TEST(Matmul, GradcheckOverAllShapeCases) {
  for (const auto& [sa, sb] : kMatmulShapes) {
    SCOPED_TRACE(format_shape(sa) + " x " + format_shape(sb));
    EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return matmul(x[0], x[1]); },
                                 {random_tensor(sa, 3), random_tensor(sb, 4)}));
  }
}

TEST(Matmul, GradcheckOneSideOnly) {
  // Only the other operand needs a gradient: its backward alone is exercised.
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return matmul(x[0], x[1]); },
                               {random_tensor({2, 2, 3}, 5, false), random_tensor({3, 2}, 6)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return matmul(x[0], x[1]); },
                               {random_tensor({2, 3}, 7), random_tensor({2, 3, 2}, 8, false)}));
}

TEST(Matmul, FloatMatchesNaiveReference) {
  Generator gen(3);
  const auto a = Tensor<float>::uniform({2, 1, 3, 4}, gen, -1.0f, 1.0f);
  const auto b = Tensor<float>::uniform({5, 4, 2}, gen, -1.0f, 1.0f);
  const xt::xarray<double> got = xt::cast<double>(matmul(a, b).value());
  EXPECT_LT(max_abs_diff(got, naive_matmul(xt::cast<double>(a.value()), xt::cast<double>(b.value()))), 1e-5);
}

TEST(Matmul, FloatBackwardMatchesDouble) {
  Generator gen(4);
  const auto a = Tensor<float>::uniform({3, 4, 5}, gen, -1.0f, 1.0f, true);
  const auto b = Tensor<float>::uniform({5, 2}, gen, -1.0f, 1.0f, true);
  const auto a64 = Tensor<double>(xt::cast<double>(a.value()), true);
  const auto b64 = Tensor<double>(xt::cast<double>(b.value()), true);
  {
    GradientTape tape;
    tape.backward(matmul(a, b), xt::xarray<float>(xt::ones<float>({3, 4, 2})));
  }
  {
    GradientTape tape;
    tape.backward(matmul(a64, b64), xt::xarray<double>(xt::ones<double>({3, 4, 2})));
  }
  EXPECT_LT(max_abs_diff(xt::cast<double>(a.grad()), a64.grad()), 1e-5);
  EXPECT_LT(max_abs_diff(xt::cast<double>(b.grad()), b64.grad()), 1e-5);
}

TEST(Matmul, LargeProductUsesRowBlocksAndMatchesNaive) {
  // 300 rows x 200 x 100: over kernels::gemm's split threshold, so it runs as TBB row blocks (and
  // its transpose, with more columns than rows, as column blocks); the batched case folds its
  // batch into the rows of one such product.
  const auto a = random_tensor({300, 200}, 1), b = random_tensor({200, 100}, 2);
  EXPECT_LT(max_abs_diff(matmul(a, b).value(), naive_matmul(a.value(), b.value())), 1e-10);
  const auto wide_a = random_tensor({100, 200}, 4), wide_b = random_tensor({200, 300}, 5);
  EXPECT_LT(max_abs_diff(matmul(wide_a, wide_b).value(), naive_matmul(wide_a.value(), wide_b.value())), 1e-10);
  const auto batched = random_tensor({3, 100, 200}, 3);
  EXPECT_LT(max_abs_diff(matmul(batched, b).value(), naive_matmul(batched.value(), b.value())), 1e-10);
}

TEST(Matmul, LargeProductSameBitsAtAnyThreadCount) {
  // Row blocks (tall), column blocks (wide); the backward's products are split both ways too.
  const testing_support::ThreadCountTest thread_count_test;
  for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{{{300, 200}, {200, 100}}, {{100, 200}, {200, 300}}}) {
    SCOPED_TRACE(format_shape(sa) + " x " + format_shape(sb));
    Generator gen(8);
    auto a = Tensor<float>::uniform(sa, gen, -1.0f, 1.0f, true);
    auto b = Tensor<float>::uniform(sb, gen, -1.0f, 1.0f, true);
    std::vector<xt::xarray<float>> runs;
    for (std::size_t threads : {1, 2}) {
      set_num_threads(threads);
      a.zero_grad();
      b.zero_grad();
      GradientTape tape;
      const auto y = matmul(a, b);
      runs.push_back(y.value());
      tape.backward(y, xt::xarray<float>(xt::ones<float>({sa[0], sb[1]})));
      runs.push_back(a.grad());
      runs.push_back(b.grad());
    }
    for (std::size_t i = 0; i < 3; ++i) {
      ASSERT_EQ(runs[i].shape(), runs[i + 3].shape());
      EXPECT_EQ(std::memcmp(runs[i].data(), runs[i + 3].data(), runs[i].size() * sizeof(float)), 0) << "result " << i;
    }
  }
}

TEST(Matmul, ScalarOperandThrowsNamingBothShapes) {
  const auto s = random_tensor({}, 1), v = random_tensor({3}, 2);
  EXPECT_TRUE(throws_with<ShapeError>([&] { matmul(s, v); }, {"matmul", "at least 1 dim", "[]", "[3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { matmul(v, s); }, {"matmul", "[3]", "[]"}));
}

TEST(Matmul, InnerSizeMismatchThrowsNamingBothShapes) {
  EXPECT_TRUE(throws_with<ShapeError>([] { matmul(random_tensor({2, 3}, 1), random_tensor({4, 5}, 2)); },
                                      {"matmul", "[2,3]", "[4,5]", "3", "4"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { matmul(random_tensor({3}, 1), random_tensor({4}, 2)); },
                                      {"matmul", "[3]", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { matmul(random_tensor({2, 3, 4}, 1), random_tensor({5}, 2)); },
                                      {"matmul", "[2,3,4]", "[5]"}));
}

TEST(Matmul, BatchAxesThatDoNotBroadcastThrowNamingBothShapes) {
  EXPECT_TRUE(throws_with<ShapeError>([] { matmul(random_tensor({2, 3, 4}, 1), random_tensor({5, 4, 2}, 2)); },
                                      {"matmul", "[2,3,4]", "[5,4,2]", "broadcast"}));
}

TEST(Matmul, UndefinedInputThrows) {
  EXPECT_TRUE(throws_with<ValueError>([] { matmul(Tensor<double>(), random_tensor({2}, 1)); }, {"matmul", "'a'"}));
  EXPECT_TRUE(throws_with<ValueError>([] { matmul(random_tensor({2}, 1), Tensor<double>()); }, {"matmul", "'b'"}));
}

// ---- linear: y = x W^T + b ----

// Plain loops over the rows of x (all leading axes folded).
xt::xarray<double> naive_linear(const xt::xarray<double>& x, const xt::xarray<double>& w, const xt::xarray<double>* b) {
  const std::size_t in = w.shape()[1], out = w.shape()[0];
  Shape shape(x.shape().begin(), x.shape().end());
  shape.back() = out;
  xt::xarray<double> y = xt::zeros<double>(shape);
  for (std::size_t r = 0; r < y.size() / out; ++r)
    for (std::size_t o = 0; o < out; ++o) {
      double acc = b ? b->data()[o] : 0.0;
      for (std::size_t i = 0; i < in; ++i) acc += x.data()[r * in + i] * w.data()[o * in + i];
      y.data()[r * out + o] = acc;
    }
  return y;
}

// x shapes with 1, 2 and 3 axes, a size-1 feature axis, and a size-1 output.
const std::vector<std::pair<Shape, Shape>> kLinearShapes = {
    {{4}, {3, 4}}, {{2, 4}, {3, 4}}, {{2, 3, 4}, {5, 4}}, {{5, 1}, {2, 1}}, {{3, 2}, {1, 2}},
};

// The backward sums a's gradient over the broadcast batch in a [batch, m, k] workspace, which can
// dwarf every input and the output: a [1,1024,1024] (8 MiB) against an empty b [2^30,1024,0] needs
// 8 PiB. Refused naming the workspace, not std::bad_alloc inside backward.
TEST(Matmul, BackwardWorkspaceTooLargeIsRefusedNamingIt) {
  GradientTape tape;
  const Tensor<double> a(xt::zeros<double>({1, 1024, 1024}), /*requires_grad=*/true);
  const Tensor<double> b(xt::xarray<double>::from_shape({std::size_t{1} << 30, 1024, 0}));
  const auto y = matmul(a, b);  // no element: returns at once, however large the batch
  EXPECT_TRUE(throws_with<ValueError>([&] { tape.backward(y, xt::xarray<double>::from_shape(y.shape())); },
                                      {"matmul", "workspace for a's gradient", "[1073741824,1024,1024]", "8 PiB"}));
}

TEST(Linear, MatchesNaiveWithAndWithoutBias) {
  for (const auto& [sx, sw] : kLinearShapes) {
    SCOPED_TRACE(format_shape(sx) + " x " + format_shape(sw));
    const auto x = random_tensor(sx, 1), w = random_tensor(sw, 2), b = random_tensor({sw[0]}, 3);
    EXPECT_LT(max_abs_diff(linear(x, w, b).value(), naive_linear(x.value(), w.value(), &b.value())), 1e-12);
    EXPECT_LT(max_abs_diff(linear(x, w).value(), naive_linear(x.value(), w.value(), nullptr)), 1e-12);
  }
}

TEST(Linear, EmptyFeatureAxisGivesTheBias) {
  const auto x = random_tensor({3, 0}, 1), w = random_tensor({2, 0}, 2), b = random_tensor({2}, 3);
  EXPECT_EQ(linear(x, w, b).value(), naive_linear(x.value(), w.value(), &b.value()));
  EXPECT_EQ(linear(x, w, b).value()(2, 1), b.value()(1));
}

TEST(Linear, GradcheckWithAndWithoutBias) {
  for (const auto& [sx, sw] : kLinearShapes) {
    SCOPED_TRACE(format_shape(sx) + " x " + format_shape(sw));
    EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return linear(v[0], v[1], v[2]); },
                                 {random_tensor(sx, 4), random_tensor(sw, 5), random_tensor({sw[0]}, 6)}));
    EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return linear(v[0], v[1]); },
                                 {random_tensor(sx, 7), random_tensor(sw, 8)}));
  }
  // Only the weight needs a gradient (a frozen input), and only the input (frozen layer).
  EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return linear(v[0], v[1], v[2]); },
                               {random_tensor({2, 3}, 9, false), random_tensor({4, 3}, 10), random_tensor({4}, 11, false)}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return linear(v[0], v[1], v[2]); },
                               {random_tensor({2, 3}, 12), random_tensor({4, 3}, 13, false), random_tensor({4}, 14, false)}));
}

TEST(Linear, WideLayerGradientsMatchNaiveAndSameBitsAtAnyThreadCount) {
  // 600 outputs: the bias gradient is summed in several parallel column blocks; 300 rows: the
  // products are split into blocks.
  const testing_support::ThreadCountTest thread_count_test;
  auto x = random_tensor({300, 40}, 1), w = random_tensor({600, 40}, 2), b = random_tensor({600}, 3);
  const auto seed = random_tensor({300, 600}, 4, false).value();
  std::vector<xt::xarray<double>> runs;
  for (std::size_t threads : {1, 2}) {
    set_num_threads(threads);
    for (auto* t : {&x, &w, &b}) t->zero_grad();
    GradientTape tape;
    tape.backward(linear(x, w, b), seed);
    runs.insert(runs.end(), {x.grad(), w.grad(), b.grad()});
  }
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(std::memcmp(runs[i].data(), runs[i + 3].data(), runs[i].size() * sizeof(double)), 0) << "gradient " << i;
  for (std::size_t j = 0; j < 600; j += 37) {
    double column = 0.0;
    for (std::size_t r = 0; r < 300; ++r) column += seed(r, j);
    EXPECT_NEAR(b.grad()(j), column, 1e-12) << "bias " << j;
  }
  const xt::xarray<double> dw_expected = naive_matmul(xt::transpose(seed), x.value());
  EXPECT_LT(max_abs_diff(w.grad(), dw_expected), 1e-10);
}

TEST(Linear, BadShapesThrowNamingAllShapes) {
  const auto w = random_tensor({3, 4}, 1);
  EXPECT_TRUE(throws_with<ShapeError>([&] { linear(random_tensor({2, 5}, 2), w); }, {"linear", "[2,5]", "[3,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { linear(random_tensor({}, 2), w); }, {"linear", "x []"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { linear(random_tensor({2, 4}, 2), random_tensor({4}, 3)); },
                                      {"linear", "weight [4]", "[out, in]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { linear(random_tensor({2, 4}, 2), w, random_tensor({4}, 3)); },
                                      {"linear", "bias [4]", "[3]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { linear(Tensor<double>(), w); }, {"linear", "'x'"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { linear(random_tensor({2, 4}, 2), Tensor<double>()); }, {"linear", "'weight'"}));
}

// ---- the BLAS kernels OpenBLAS picked (autograd/kernels/gemm/blas_core.h) --------------------------

using kernels::SimdLevel;

TEST(BlasKernels, CoreNamesHaveTheirLevels) {
  EXPECT_EQ(kernels::openblas_core_level("Prescott"), SimdLevel::kSse);
  EXPECT_EQ(kernels::openblas_core_level("Sandybridge"), SimdLevel::kAvx);
  EXPECT_EQ(kernels::openblas_core_level("Haswell"), SimdLevel::kAvx2);
  EXPECT_EQ(kernels::openblas_core_level("Zen"), SimdLevel::kAvx2);
  EXPECT_EQ(kernels::openblas_core_level("SkylakeX"), SimdLevel::kAvx512);
  EXPECT_EQ(kernels::openblas_core_level("Cooperlake"), SimdLevel::kAvx512);
  EXPECT_EQ(kernels::openblas_core_level("haswell"), SimdLevel::kUnknown);  // OpenBLAS's spelling only
  EXPECT_EQ(kernels::openblas_core_level("Unknown"), SimdLevel::kUnknown);
}

TEST(BlasKernels, OlderKernelsThanTheCpuGetAWarningNamingTheVariable) {
  const std::string preset = kernels::blas_kernel_warning("Haswell", SimdLevel::kAvx512, "Haswell");
  EXPECT_NE(preset.find("OpenBLAS runs its Haswell kernels (AVX2) on a CPU with AVX-512"), std::string::npos) << preset;
  EXPECT_NE(preset.find("Set OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << preset;
  EXPECT_NE(preset.find("it is set to 'Haswell' now"), std::string::npos) << preset;
  // Unset: OpenBLAS fell back to generic kernels on a CPU it does not know.
  const std::string unset = kernels::blas_kernel_warning("Prescott", SimdLevel::kAvx2, nullptr);
  EXPECT_NE(unset.find("Set OPENBLAS_CORETYPE=Haswell"), std::string::npos) << unset;
  EXPECT_NE(unset.find("it is not set now"), std::string::npos) << unset;
  EXPECT_NE(kernels::blas_kernel_warning("Zen", SimdLevel::kAvx512, nullptr), "");  // Zen 4 and 5 have AVX-512
}

TEST(BlasKernels, MatchingOrUnknownKernelsAreNotWarnedAbout) {
  EXPECT_EQ(kernels::blas_kernel_warning("SkylakeX", SimdLevel::kAvx512, "SkylakeX"), "");
  EXPECT_EQ(kernels::blas_kernel_warning("Cooperlake", SimdLevel::kAvx512, nullptr), "");
  EXPECT_EQ(kernels::blas_kernel_warning("Haswell", SimdLevel::kAvx2, nullptr), "");
  EXPECT_EQ(kernels::blas_kernel_warning("SkylakeX", SimdLevel::kAvx2, nullptr), "");  // newer kernels: OpenBLAS's call
  EXPECT_EQ(kernels::blas_kernel_warning("Unknown", SimdLevel::kAvx512, nullptr), "");
}

// The real process: this test binary with OPENBLAS_CORETYPE=Prescott (SSE kernels) runs a test
// that multiplies matrices many times, and prints the warning once.
TEST(BlasKernels, AProcessWithOldKernelsWarnsOnceOnStderr) {
  if (kernels::cpu_simd_level() <= SimdLevel::kSse) GTEST_SKIP() << "SKIPPED: this CPU has no more than SSE";
  const std::string command =
      "OPENBLAS_CORETYPE=Prescott /proc/" + std::to_string(getpid()) +
      "/exe --gtest_filter=Matmul.MatchesNaiveReferenceOverAllShapeCases 2>&1 >/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string err;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) err.append(buffer.data(), n);
  ASSERT_EQ(pclose(pipe), 0) << err;
  const std::string warning = "tapegrad: OpenBLAS runs its Prescott kernels (SSE)";
  const auto first = err.find(warning);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(warning, first + 1), std::string::npos) << "warned more than once:\n" << err;
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// matmul and linear are linear in each operand: a sample with one differentiated operand squares
// it first (or multiplies the result by an input), so its second derivative is not zero. Between
// them the gradgradchecks reach every transpose-flag combination of matmul's backward product
// (each operand's gradient differentiated with respect to g and to the other operand) and
// broadcast batch axes summed back.
TAPEGRAD_OP_SPEC(matmul) {
  OpSpec s("matmul", "linalg");
  s.samples = {
      // ---- matmul ----
      {"matmul_2d", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 301), leaf({3, 4}, 302)}; }},
      {"matmul_squared_operands", [](const auto& x) { return matmul(mul(x[0], x[0]), mul(x[1], x[1])); },
       [] { return V{leaf({3, 2}, 303), leaf({2, 3}, 304)}; }},
      {"matmul_self_transposed", [](const auto& x) { return matmul(x[0], transpose(x[0], 0, 1)); },
       [] { return V{leaf({3, 4}, 305)}; }},
      {"matmul_constant_b", [](const auto& x) { return matmul(mul(x[0], x[0]), x[1]); },
       [] { return V{leaf({2, 3}, 306), constant({3, 2}, 307)}; }},
      {"matmul_constant_a", [](const auto& x) { return mul(matmul(x[0], x[1]), x[1]); },
       [] { return V{constant({3, 3}, 308), leaf({3, 2}, 309)}; }},
      {"matmul_dot", [](const auto& x) { return matmul(x[0], mul(x[1], x[0])); },
       [] { return V{leaf({4}, 310), leaf({4}, 311)}; }},
      {"matmul_matrix_vector", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 312), leaf({3}, 313)}; }},
      {"matmul_vector_matrix", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({3}, 314), leaf({3, 2}, 315)}; }},
      {"matmul_batched_vector", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 316), leaf({3}, 317)}; }},
      {"matmul_vector_batched", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({3}, 318), leaf({2, 3, 2}, 319)}; }},
      // b shared by the batch: its gradient is the batch folded into one product.
      OpCase("matmul_batch_times_matrix", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 320), leaf({3, 2}, 321)}; }).at_scale([] { return V{leaf({4, 67, 131}, 933), leaf({131, 71}, 934)}; }),
      {"matmul_matrix_times_batch", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 322), leaf({3, 3, 2}, 323)}; }},
      OpCase("matmul_batched_same", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 324), leaf({2, 3, 2}, 325)}; }).at_scale([] { return V{leaf({4, 67, 131}, 931), leaf({4, 131, 71}, 932)}; }),
      {"matmul_batch_broadcast_both", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 1, 2, 3}, 326), leaf({3, 3, 2}, 327)}; }},
      {"matmul_batch_size_one_axes", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({1, 3, 2, 2}, 328), leaf({2, 1, 2, 3}, 329)}; }},
      {"matmul_chain", [](const auto& x) { return matmul(matmul(x[0], x[1]), x[2]); },
       [] { return V{leaf({2, 3}, 330), leaf({3, 2}, 331), leaf({2, 2}, 332)}; }},
  };
  s.errors = {
      error_input<ShapeError>("matmul_0d_operand", "`matmul`", "a 0-d operand",
                  [] { return matmul(bad_inputs::zeros({}), bad_inputs::zeros({2})); },
                  {"matmul", "at least 1 dim", "[]", "[2]"}),
      error_input<ShapeError>("matmul_inner_size_mismatch", "`matmul`", "[2,3] x [4,5]",
                  [] { return matmul(bad_inputs::zeros({2, 3}), bad_inputs::zeros({4, 5})); },
                  {"matmul", "[2,3]", "[4,5]"}),
      error_input<ShapeError>("matmul_batch_axes_do_not_broadcast", "`matmul`", "batch axes 2 and 3",
                  [] { return matmul(bad_inputs::zeros({2, 2, 3}), bad_inputs::zeros({3, 3, 4})); },
                  {"matmul", "[2,2,3]", "[3,3,4]"}),
      error_input<ShapeError>("matmul_vector_size_mismatch", "`matmul`", "[3] x [4]",
                  [] { return matmul(bad_inputs::zeros({3}), bad_inputs::zeros({4})); },
                  {"matmul", "[3]", "[4]"}),
      error_input<ValueError>("matmul_undefined_b", "`matmul`", "undefined b",
                  [] { return matmul(bad_inputs::zeros({2, 2}), bad_inputs::undefined()); },
                  {"matmul", "'b'", "undefined"}),
  };
  s.pytorch = {
      {"matmul", [](Call& c) -> Outputs { return {matmul(c.tensor(c.input()), c.tensor(c.arg(0)))}; }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(linear) {
  OpSpec s("linear", "linalg");
  s.samples = {
      // ---- linear ----
      {"linear_vector_bias", [](const auto& x) { return linear(x[0], x[1], x[2]); },
       [] { return V{leaf({4}, 340), leaf({3, 4}, 341), leaf({3}, 342)}; }},
      {"linear_2d_bias_squared", [](const auto& x) { return mul(linear(x[0], x[1], x[2]), linear(x[0], x[1], x[2])); },
       [] { return V{leaf({2, 4}, 343), leaf({3, 4}, 344), leaf({3}, 345)}; }},
      OpCase("linear_3d_bias", [](const auto& x) { return linear(x[0], x[1], x[2]); },
       [] { return V{leaf({2, 3, 4}, 346), leaf({5, 4}, 347), leaf({5}, 348)}; }).at_scale([] { return V{leaf({4, 67, 131}, 937), leaf({71, 131}, 938), leaf({71}, 939)}; }),
      {"linear_3d_no_bias", [](const auto& x) { return linear(x[0], x[1]); },
       [] { return V{leaf({2, 3, 2}, 349), leaf({3, 2}, 350)}; }},
      {"linear_no_bias_squared_x", [](const auto& x) { return linear(mul(x[0], x[0]), x[1]); },
       [] { return V{leaf({3, 2}, 351), constant({2, 2}, 352)}; }},
      {"linear_weight_only", [](const auto& x) { return mul(linear(x[0], x[1]), linear(x[0], x[1])); },
       [] { return V{constant({3, 4}, 353), leaf({2, 4}, 354)}; }},
      {"linear_bias_only", [](const auto& x) { return mul(linear(x[0], x[1], x[2]), x[2]); },
       [] { return V{constant({2, 3, 2}, 355), constant({3, 2}, 356), leaf({3}, 357)}; }},
      {"linear_size_one_features", [](const auto& x) { return linear(x[0], x[1], x[2]); },
       [] { return V{leaf({5, 1}, 358), leaf({2, 1}, 359), leaf({2}, 360)}; }},
  };
  s.errors = {
      error_input<ShapeError>("linear_in_features_mismatch", "`linear`", "x [4,3] with weight [2,5]",
                  [] { return linear(bad_inputs::zeros({4, 3}), bad_inputs::zeros({2, 5})); },
                  {"linear", "[4,3]", "[2,5]"}),
      error_input<ShapeError>("linear_bias_wrong_length", "`linear`", "bias [3] for weight [2,3]",
                  [] { return linear(bad_inputs::zeros({4, 3}), bad_inputs::zeros({2, 3}), bad_inputs::zeros({3})); },
                  {"linear", "bias", "[3]", "[2,3]"}),
  };
  s.pytorch = {
      {"nn.functional.linear",
       [](Call& c) -> Outputs {
         const T x = c.tensor(c.input());
         const T weight = c.tensor(c.arg(0));
         return {linear(x, weight, c.has_arg(1) ? c.tensor(c.arg(1)) : T())};
       }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
