#pragma once
// float32 to bfloat16 (its upper 16 bits), rounded to nearest, ties to even: the rounding of
// oneDNN's f32-to-bf16 reorder and of PyTorch's conversion. NaN stays NaN (quiet); values past
// bf16's largest finite one round to infinity, as in IEEE arithmetic.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tapegrad::kernels {

inline std::uint16_t bf16_bits(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // NaN
  const std::uint32_t round_half_to_even = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + round_half_to_even) >> 16);
}

// x rounded to the nearest bf16 value, as a float (every bf16 value is exactly a float).
inline float round_to_bf16(float x) { return std::bit_cast<float>(std::uint32_t{bf16_bits(x)} << 16); }

// n floats rounded to bf16 into out: as bf16 bits (Out = std::uint16_t) or as the floats they
// stand for (Out = float).
template <class Out>
void copy_rounded_to_bf16(const float* in, std::size_t n, Out* out) {
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<Out, float>) {
      out[i] = round_to_bf16(in[i]);
    } else {
      out[i] = bf16_bits(in[i]);
    }
  }
}

}  // namespace tapegrad::kernels
