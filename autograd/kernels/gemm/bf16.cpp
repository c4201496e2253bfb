#include "autograd/kernels/gemm/bf16.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__)
#include <immintrin.h>
#endif

namespace tapegrad::kernels {

namespace {

#if defined(__AVX512BF16__) && defined(__AVX512BW__)

// 16 floats (the lanes of `x`) rounded as bf16_bits rounds them: vcvtneps2bf16 rounds to nearest
// even, quiets NaN and turns subnormals into zeros of their sign whatever MXCSR says.
__m256i rounded_lanes(__m512 x) { return (__m256i)_mm512_cvtneps_pbh(x); }

template <class Store>
void round_blocks(const float* in, std::size_t n, const Store& store) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) store(i, rounded_lanes(_mm512_loadu_ps(in + i)), __mmask16(0xffff));
  if (i < n) {
    const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    store(i, rounded_lanes(_mm512_maskz_loadu_ps(tail, in + i)), tail);
  }
}

#endif

}  // namespace

void copy_rounded_to_bf16(const float* in, std::size_t n, std::uint16_t* out) {
#if defined(__AVX512BF16__) && defined(__AVX512BW__)
  round_blocks(in, n, [out](std::size_t i, __m256i lanes, __mmask16 mask) {
    _mm256_mask_storeu_epi16(out + i, mask, lanes);
  });
#else
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_bits(in[i]);
#endif
}

void copy_rounded_to_bf16(const float* in, std::size_t n, float* out) {
#if defined(__AVX512BF16__) && defined(__AVX512BW__)
  round_blocks(in, n, [out](std::size_t i, __m256i lanes, __mmask16 mask) {
    const __m512i widened = _mm512_slli_epi32(_mm512_cvtepu16_epi32(lanes), 16);
    _mm512_mask_storeu_ps(out + i, mask, _mm512_castsi512_ps(widened));
  });
#else
  for (std::size_t i = 0; i < n; ++i) out[i] = round_to_bf16(in[i]);
#endif
}

}  // namespace tapegrad::kernels
