#pragma once
// float32 to bfloat16 (its upper 16 bits) as bf16 mode's products read their inputs
// (base/matmul_precision.h): rounded to nearest, ties to even, the rounding of oneDNN's f32-to-bf16
// reorder and of PyTorch's conversion. NaN stays NaN (quiet); values past bf16's largest finite
// one round to infinity, as in IEEE arithmetic. Subnormal floats (0 < |x| < 2^-126) become a zero
// of their sign, as the CPU's bf16 instructions take them (vcvtneps2bf16 converts them so and
// vdpbf16ps, oneDNN's bf16 matmul on AVX512_BF16, reads subnormal bf16 as zero): every library a
// product may go to then sees the same inputs, on every CPU.
#include <bit>
#include <cstddef>
#include <cstdint>

namespace tapegrad::kernels {

inline std::uint16_t bf16_bits(float x) {
  // Selects, no early return: the copies' loop (bf16.cpp) then vectorises without AVX512_BF16.
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  const std::uint32_t kept = magnitude < 0x00800000u ? bits & 0x80000000u : bits;  // a subnormal: its signed 0
  const auto rounded = static_cast<std::uint16_t>((kept + 0x7fffu + ((kept >> 16) & 1u)) >> 16);  // ties to even
  const auto quiet_nan = static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  return magnitude > 0x7f800000u ? quiet_nan : rounded;
}

// x rounded to the nearest bf16 value, as a float (every bf16 value is exactly a float).
inline float round_to_bf16(float x) { return std::bit_cast<float>(std::uint32_t{bf16_bits(x)} << 16); }

// n floats rounded to bf16 into out: as bf16 bits (std::uint16_t) or as the floats they stand for.
// Every element as bf16_bits rounds it, with the CPU's bf16 conversion instruction where the build
// targets one (bf16.cpp), whose results are bf16_bits's.
void copy_rounded_to_bf16(const float* in, std::size_t n, std::uint16_t* out);
void copy_rounded_to_bf16(const float* in, std::size_t n, float* out);

}  // namespace tapegrad::kernels
