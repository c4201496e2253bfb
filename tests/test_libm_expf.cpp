#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "autograd/kernels/simd/libm_expf.h"
#include "autograd/kernels/simd/simd_span.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

float from_bits(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

std::uint32_t bits_of(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

// Runs libm_expf_inplace over xs in pieces of 1, 2, ..., 37 elements (every count of whole
// vectors and partial last vector, AVX-512 or AVX2), each piece followed in its buffer by NaN
// guards that must stay as they were; returns how many results differ from std::exp in any bit.
std::size_t differences_from_std_exp(const std::vector<float>& xs) {
  constexpr std::size_t kGuards = 16;
  const float guard = from_bits(0x7fc01234u);
  std::size_t differing = 0, piece = 1;
  std::vector<float> buffer;
  for (std::size_t at = 0; at < xs.size(); at += piece, piece = piece % 37 + 1) {
    const std::size_t n = std::min(piece, xs.size() - at);
    buffer.assign(xs.begin() + static_cast<std::ptrdiff_t>(at), xs.begin() + static_cast<std::ptrdiff_t>(at + n));
    buffer.resize(n + kGuards, guard);
    kernels::simd::libm_expf_inplace(buffer.data(), n);
    for (std::size_t i = 0; i < n; ++i) differing += bits_of(buffer[i]) != bits_of(std::exp(xs[at + i]));
    for (std::size_t i = n; i < n + kGuards; ++i) EXPECT_EQ(bits_of(buffer[i]), bits_of(guard)) << "written past " << n;
  }
  return differing;
}

// The header promises std::exp's bits for every float (all 2^32 were compared when it was written,
// bench/RESULTS.md). Here: one bit pattern in 509 over the whole range, both signs, NaNs with
// payloads and subnormals included, and every float near the edges of its cases.
TEST(LibmExpf, HasStdExpBitsAcrossTheFloats) {
  std::vector<float> xs;
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 509) xs.push_back(from_bits(std::uint32_t(bits)));
  // Where the result underflows to 0 or overflows, where glibc leaves its fast path (|x| >= 88),
  // around 0 and around the largest finite input.
  for (const float edge : {-0x1.9fe368p6f, 0x1.62e42ep6f, 88.0f, -88.0f, -0x1.9d1d9ep6f, 0.0f, -0.0f, 1e-30f, -1e-30f,
                           std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()}) {
    const std::uint32_t bits = bits_of(edge);
    for (std::uint32_t d = 0; d < 4096; ++d) {
      xs.push_back(from_bits(bits + d));
      xs.push_back(from_bits(bits - d));
    }
  }
  for (const float special : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(), from_bits(0xff812345u), from_bits(0x7f800001u)})
    xs.push_back(special);
  EXPECT_EQ(differences_from_std_exp(xs), 0u);
}

// Two of the inputs that tell glibc's fused multiply-adds in the argument reduction from a multiply
// then an add: computed without fusing, their results are 1 ulp away from std::exp's.
TEST(LibmExpf, FusesTheArgumentReductionAsGlibcDoes) {
  EXPECT_EQ(differences_from_std_exp({0x1.04845ep+5f, -0x1.f8cbb2p+5f}), 0u);
}

// exp_inplace: xsimd's exp over whole vectors, std::exp's bits for the rest, at every length up to
// three vectors; -inf (a masked score) gives exactly 0.
TEST(LibmExpf, ExpInplaceGivesStdExpBitsAfterTheWholeVectors) {
  constexpr std::size_t width = kernels::simd::Batch<float>::size;
  for (std::size_t n = 0; n <= 3 * width; ++n) {
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = i % 5 == 4 ? -std::numeric_limits<float>::infinity() : -0.37f * float(i) + 2.5f;
    std::vector<float> y = x;
    kernels::simd::exp_inplace(y.data(), n);
    const std::size_t whole = n / width * width;
    for (std::size_t i = 0; i < n; ++i) {
      SCOPED_TRACE("n " + std::to_string(n) + ", i " + std::to_string(i));
      if (i >= whole) {
        EXPECT_EQ(bits_of(y[i]), bits_of(std::exp(x[i])));
      }
      EXPECT_NEAR(y[i], std::exp(x[i]), 2e-7f * std::exp(x[i]));
      if (i % 5 == 4) {
        EXPECT_EQ(bits_of(y[i]), 0u);
      }
    }
  }
}

}  // namespace
}  // namespace tapegrad
