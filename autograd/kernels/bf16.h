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

// rows x cols floats read with row stride `ld`, written rounded to bf16 densely to out: as bf16
// bits (Out = std::uint16_t) or as the floats they stand for (Out = float).
template <class Out>
void copy_rounded_to_bf16(const float* in, std::size_t rows, std::size_t cols, std::size_t ld, Out* out) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      if constexpr (std::is_same_v<Out, float>) {
        out[r * cols + c] = round_to_bf16(in[r * ld + c]);
      } else {
        out[r * cols + c] = bf16_bits(in[r * ld + c]);
      }
    }
}

}  // namespace tapegrad::kernels
