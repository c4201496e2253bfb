// bf16 mode (autograd/base/matmul_precision.h) at the level of ops: the rounding itself, the scope's
// extent (per thread, nested), that each op's backward runs in the mode of its forward wherever
// backward is called, and that float64 is never rounded. The products themselves are checked on
// every layout and backend in test_gemm_backends.cpp.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/base/generator.h"
#include "autograd/kernels/gemm/bf16.h"
#include "autograd/kernels/gemm/blas.h"
#include "autograd/base/matmul_precision.h"
#include "autograd/ops/linalg.h"
#include "autograd/core/tape.h"

namespace tapegrad {
namespace {

using kernels::round_to_bf16;

TEST(Bf16Rounding, ToNearestTiesToEven) {
  const float one = 1.0f, ulp = std::ldexp(1.0f, -7);  // bf16's spacing above 1
  EXPECT_EQ(round_to_bf16(one), one);
  EXPECT_EQ(round_to_bf16(one + ulp / 2), one);                                   // tie, 1 is even
  EXPECT_EQ(round_to_bf16(one + 3 * ulp / 2), one + 2 * ulp);                     // tie, 1 + ulp is odd
  EXPECT_EQ(round_to_bf16(one + ulp / 2 + std::ldexp(1.0f, -20)), one + ulp);     // past the tie
  EXPECT_EQ(round_to_bf16(-(one + ulp / 2 + std::ldexp(1.0f, -20))), -(one + ulp));
  EXPECT_EQ(round_to_bf16(one + ulp / 2 - std::ldexp(1.0f, -20)), one);          // short of it
  EXPECT_TRUE(std::signbit(round_to_bf16(-0.0f)));
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits only in the low 16 bits would become infinity if merely truncated.
  EXPECT_TRUE(std::isnan(round_to_bf16(std::bit_cast<float>(std::uint32_t{0x7f800001u}))));
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(round_to_bf16(tiny), 0.0f);
}

// A subnormal float becomes a zero of its sign (as vcvtneps2bf16 converts it and vdpbf16ps reads
// it), even one bf16 could hold or one that would round up to the smallest normal number.
TEST(Bf16Rounding, SubnormalsBecomeZerosOfTheirSign) {
  const float smallest_normal = std::numeric_limits<float>::min();  // 2^-126
  const float largest_subnormal = std::nextafter(smallest_normal, 0.0f);
  for (const float subnormal : {std::ldexp(1.0f, -130), largest_subnormal, smallest_normal / 2}) {
    EXPECT_EQ(kernels::bf16_bits(subnormal), 0x0000u) << subnormal;
    EXPECT_EQ(kernels::bf16_bits(-subnormal), 0x8000u) << -subnormal;
  }
  EXPECT_EQ(round_to_bf16(smallest_normal), smallest_normal);
  EXPECT_EQ(round_to_bf16(-smallest_normal), -smallest_normal);
}

// The copies (vectorised with the CPU's bf16 conversion where the build has it) round every float
// as bf16_bits does: every upper half, each with low
// halves below, at, just past and far past the tie, at an odd length and offset so the masked
// tail is read too. NaN bits are compared as bits.
TEST(Bf16Rounding, CopiesRoundEveryUpperHalfAsTheScalarRounding) {
  const std::uint32_t low_halves[] = {0x0000, 0x0001, 0x4000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff};
  std::vector<float> in(1);  // in[0] is skipped: the copies start off a 64-byte boundary
  for (std::uint32_t high = 0; high <= 0xffff; ++high)
    for (const std::uint32_t low : low_halves) in.push_back(std::bit_cast<float>(high << 16 | low));
  in.resize(in.size() - 3);  // a length that is not a multiple of 16
  const std::size_t n = in.size() - 1;
  std::vector<std::uint16_t> bits(n);
  std::vector<float> floats(n);
  kernels::copy_rounded_to_bf16(in.data() + 1, n, bits.data());
  kernels::copy_rounded_to_bf16(in.data() + 1, n, floats.data());
  std::size_t wrong = 0, subnormals = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t expected = kernels::bf16_bits(in[i + 1]);
    if (bits[i] != expected || std::bit_cast<std::uint32_t>(floats[i]) != std::uint32_t{expected} << 16) {
      if (++wrong <= 5) ADD_FAILURE() << "input bits " << std::hex << std::bit_cast<std::uint32_t>(in[i + 1]);
    }
    subnormals += std::fpclassify(in[i + 1]) == FP_SUBNORMAL;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(subnormals, 1000u);  // the inputs do exercise subnormal inputs
  // Short copies: lengths 0 to 33, nothing written past n.
  for (std::size_t length = 0; length <= 33; ++length) {
    std::vector<std::uint16_t> out(length + 1, 0xabcd);
    kernels::copy_rounded_to_bf16(in.data() + 1 + 1000, length, out.data());
    for (std::size_t i = 0; i < length; ++i) EXPECT_EQ(out[i], kernels::bf16_bits(in[1 + 1000 + i]));
    EXPECT_EQ(out[length], 0xabcd) << "length " << length;
  }
}

TEST(MatmulPrecision, ScopeIsPerThreadAndNests) {
  EXPECT_EQ(matmul_precision(), MatmulPrecision::kFloat32);
  {
    const MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
    EXPECT_EQ(matmul_precision(), MatmulPrecision::kBfloat16);
    MatmulPrecision elsewhere = MatmulPrecision::kBfloat16;
    std::thread([&] { elsewhere = matmul_precision(); }).join();
    EXPECT_EQ(elsewhere, MatmulPrecision::kFloat32);
    {
      const MatmulPrecisionGuard fp32(MatmulPrecision::kFloat32);
      EXPECT_EQ(matmul_precision(), MatmulPrecision::kFloat32);
    }
    EXPECT_EQ(matmul_precision(), MatmulPrecision::kBfloat16);
  }
  EXPECT_EQ(matmul_precision(), MatmulPrecision::kFloat32);
}

// An op with a matrix product, from two tensors (a weight-like one and an input-like one).
struct ProductOp {
  std::string name;
  Shape x_shape, w_shape;
  std::function<Tensor<float>(const Tensor<float>&, const Tensor<float>&)> apply;
};

const std::vector<ProductOp> kProductOps = {
    {"linear", {6, 40}, {24, 40},
     [](const Tensor<float>& x, const Tensor<float>& w) { return linear(x, w, Tensor<float>()); }},
    {"matmul", {3, 6, 40}, {40, 24}, [](const Tensor<float>& x, const Tensor<float>& w) { return matmul(x, w); }},
    {"einsum", {6, 3, 40}, {3, 40, 24}, [](const Tensor<float>& x, const Tensor<float>& w) {
       return einsum("ibk,bkj->bij", std::vector<Tensor<float>>{x, w});
     }},
};

struct Gradients {
  xt::xarray<float> value, dx, dw;
};

// The op's value and first-order gradients (of the sum of its squares, so the backward's
// products read float values that are not bf16 already), with `forward` and `backward` modes.
Gradients run(const ProductOp& op, MatmulPrecision forward, MatmulPrecision backward) {
  Generator gen(7);
  Tensor<float> x = Tensor<float>::uniform(op.x_shape, gen, -1.0f, 1.0f, true);
  Tensor<float> w = Tensor<float>::uniform(op.w_shape, gen, -1.0f, 1.0f, true);
  GradientTape tape;
  Tensor<float> y;
  {
    const MatmulPrecisionGuard mode(forward);
    y = op.apply(x, w);
  }
  const MatmulPrecisionGuard mode(backward);
  tape.backward(y, xt::xarray<float>(y.value() * 2.0f));
  return {y.value(), x.grad(), w.grad()};
}

// PyTorch's autocast pattern: forward in the scope, backward after it. The backward's products
// run in bf16 all the same: the same bits as a backward inside the scope, and not float32's.
TEST(MatmulPrecision, BackwardRunsInItsForwardsMode) {
  constexpr auto bf16 = MatmulPrecision::kBfloat16, fp32 = MatmulPrecision::kFloat32;
  for (const ProductOp& op : kProductOps) {
    SCOPED_TRACE(op.name);
    const Gradients outside = run(op, bf16, fp32), inside = run(op, bf16, bf16), single = run(op, fp32, bf16),
                    plain = run(op, fp32, fp32);
    EXPECT_EQ(outside.dx, inside.dx);
    EXPECT_EQ(outside.dw, inside.dw);
    EXPECT_NE(outside.value, plain.value);
    EXPECT_NE(outside.dx, plain.dx);
    EXPECT_NE(outside.dw, plain.dw);
    // and a float32 forward's backward stays float32 inside a bf16 scope
    EXPECT_EQ(single.dx, plain.dx);
    EXPECT_EQ(single.dw, plain.dw);
    // bf16 keeps 8 bits: each product within a few 2^-8 of float32's, relative to its scale
    EXPECT_LT(xt::amax(xt::abs(outside.value - plain.value))(), 0.1);
  }
}

// Each tensor a product reads is rounded once per forward and backward: the forward's copies of x
// and w are reused by the backward, and the output gradient g is rounded once for both operand
// gradients (kernels::ReuseRoundedSource). Without the reuse the backward would round x, w and g
// twice each. (einsum reads x [i, b, k] in place as [b, i, k] matrices, with strides.)
TEST(MatmulPrecision, EachOperandRoundedOncePerForwardAndBackward) {
  for (const ProductOp& op : kProductOps) {
    SCOPED_TRACE(op.name);
    Generator gen(3);
    Tensor<float> x = Tensor<float>::uniform(op.x_shape, gen, -1.0f, 1.0f, true);
    Tensor<float> w = Tensor<float>::uniform(op.w_shape, gen, -1.0f, 1.0f, true);
    const std::size_t before = kernels::bf16_rounded_floats();
    GradientTape tape(/*persistent=*/true);
    Tensor<float> y;
    {
      const MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
      y = op.apply(x, w);
    }
    EXPECT_EQ(kernels::bf16_rounded_floats() - before, x.numel() + w.numel());
    const xt::xarray<float> seed = y.value() * 2.0f;
    tape.backward(y, seed);
    EXPECT_EQ(kernels::bf16_rounded_floats() - before, x.numel() + w.numel() + y.numel());
    // A second backward over the same tape reuses the forward's copies again: same gradients.
    const xt::xarray<float> dx = x.grad(), dw = w.grad();
    x.zero_grad();
    w.zero_grad();
    tape.backward(y, seed);
    EXPECT_EQ(x.grad(), dx);
    EXPECT_EQ(w.grad(), dw);
  }
}

// The scopes that keep rounded copies are per thread: two threads training on one shared weight
// in bf16 at once (each with its own tape and input) get the gradients a lone thread gets.
TEST(MatmulPrecision, ThreadsSharingAWeightKeepTheirOwnCopies) {
  for (const ProductOp& op : kProductOps) {
    SCOPED_TRACE(op.name);
    Generator gen(11);
    const Tensor<float> w = Tensor<float>::uniform(op.w_shape, gen, -1.0f, 1.0f);
    std::vector<Tensor<float>> inputs;
    for (int t = 0; t < 2; ++t) inputs.push_back(Tensor<float>::uniform(op.x_shape, gen, -1.0f, 1.0f, true));
    const auto gradient = [&](Tensor<float> x) {
      GradientTape tape;
      const MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
      const Tensor<float> y = op.apply(x, w);
      x.zero_grad();
      tape.backward(y, xt::xarray<float>(y.value() * 2.0f));
      return xt::xarray<float>(x.grad());
    };
    std::vector<xt::xarray<float>> alone;
    for (const auto& x : inputs) alone.push_back(gradient(x));
    std::vector<int> mismatches(2, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        for (int step = 0; step < 300; ++step) mismatches[t] += gradient(inputs[t]) != alone[t];
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(mismatches, std::vector<int>(2, 0));
  }
}

// The forward's copies stand for the operands' values when it ran; a backward after the operand
// was changed in place would compute from stale copies, but it never runs: backward refuses an
// op whose input was modified since.
TEST(MatmulPrecision, OperandModifiedAfterTheForwardIsRefused) {
  Generator gen(4);
  Tensor<float> x = Tensor<float>::uniform({6, 40}, gen, -1.0f, 1.0f, true);
  Tensor<float> w = Tensor<float>::uniform({24, 40}, gen, -1.0f, 1.0f, true);
  GradientTape tape;
  const MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
  const Tensor<float> y = linear(x, w, Tensor<float>());
  w.mutable_value() *= 2.0f;
  EXPECT_THROW(tape.backward(y, xt::xarray<float>(xt::ones<float>(y.shape()))), TapeError);
}

// What float32 products do with NaN, infinities and empty extents, bf16 does too: a NaN or an
// infinity reaches exactly the outputs that read it (on both libraries, one product small enough
// for OpenBLAS's rounded path and one large enough for oneDNN's), and empty products are empty or
// zero, as in float32.
TEST(MatmulPrecision, NonFiniteAndEmptyProductsAsInFloat32) {
  const MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
  for (const std::size_t n : {std::size_t{4}, std::size_t{96}}) {  // 4*4*4 and 96^3 multiply-adds
    SCOPED_TRACE(n);
    xt::xarray<float> a = xt::ones<float>({n, n}), b = xt::ones<float>({n, n});
    a(1, 2) = std::numeric_limits<float>::quiet_NaN();
    a(3, 0) = std::numeric_limits<float>::infinity();
    b(0, 1) = -1.0f;  // row 3 column 1 meets inf * -1: -inf
    const xt::xarray<float> c = matmul(Tensor<float>(a), Tensor<float>(b)).value();
    for (std::size_t j = 0; j < n; ++j) EXPECT_TRUE(std::isnan(c(1, j))) << j;
    EXPECT_EQ(c(3, 1), -std::numeric_limits<float>::infinity());
    EXPECT_EQ(c(3, 0), std::numeric_limits<float>::infinity());
    EXPECT_EQ(c(0, 0), float(n));
    EXPECT_EQ(c(0, 1), float(n) - 2.0f);
  }
  const Tensor<float> no_inner = Tensor<float>::ones({3, 0}), no_inner_b = Tensor<float>::ones({0, 5});
  EXPECT_EQ(matmul(no_inner, no_inner_b).value(), xt::xarray<float>(xt::zeros<float>({3, 5})));
  EXPECT_EQ(matmul(Tensor<float>::ones({0, 4}), Tensor<float>::ones({4, 5})).value().size(), 0u);
  const std::vector<Tensor<float>> empty_pair{Tensor<float>::ones({2, 0}), Tensor<float>::ones({0, 3})};
  EXPECT_EQ(einsum("ij,jk->ik", empty_pair).value(), xt::xarray<float>(xt::zeros<float>({2, 3})));
}

// A product reads a subnormal input as zero at every size, whichever library computes it: one
// small enough for OpenBLAS's rounded path (4x4x4) and one large enough for oneDNN's bf16 matmul
// on a CPU with AVX512_BF16 (96^3 multiply-adds, past the 2^18 of gemm_backend.cpp). Each output
// here is one subnormal or normal input times 2^40, so no term of a sum is itself subnormal.
TEST(MatmulPrecision, SubnormalInputsReadAsZeroWhateverTheProductsSize) {
  const float smallest_normal = std::numeric_limits<float>::min();  // 2^-126
  const float subnormals[] = {std::ldexp(1.0f, -130), -std::ldexp(1.0f, -130), std::nextafter(smallest_normal, 0.0f)};
  for (const std::size_t n : {std::size_t{4}, std::size_t{96}}) {
    SCOPED_TRACE(n);
    xt::xarray<float> a = xt::zeros<float>({n, n}), b = xt::zeros<float>({n, n});
    for (std::size_t i = 0; i < 3; ++i) a(i, 0) = subnormals[i];
    a(3, 0) = smallest_normal;
    b(0, 1) = std::ldexp(1.0f, 40);
    const MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
    const xt::xarray<float> c = matmul(Tensor<float>(a), Tensor<float>(b)).value();
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(c(i, 1), 0.0f) << "row " << i << ": " << subnormals[i] << " * 2^40";
    }
    EXPECT_EQ(c(3, 1), std::ldexp(1.0f, -86));
  }
}

TEST(MatmulPrecision, Float64IsNeverRounded) {
  Generator gen(3);
  const auto a = Tensor<double>::uniform({5, 33}, gen, -1.0, 1.0);
  const auto b = Tensor<double>::uniform({33, 7}, gen, -1.0, 1.0);
  const xt::xarray<double> plain = matmul(a, b).value();
  const MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
  EXPECT_EQ(matmul(a, b).value(), plain);
}

}  // namespace
}  // namespace tapegrad
