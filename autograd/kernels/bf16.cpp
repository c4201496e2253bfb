#include "autograd/kernels/bf16.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__)
#include <immintrin.h>
#endif

namespace tapegrad::kernels {

namespace {

#if defined(__AVX512BF16__) && defined(__AVX512BW__)

// 16 floats (the lanes of `load`) rounded as bf16_bits rounds them. vcvtneps2bf16 rounds to
// nearest even and quiets NaN as bf16_bits does, but flushes subnormal inputs to zero whatever
// MXCSR says; those lanes (rare: a test-only branch in practice) are rounded with bf16_bits's
// integer formula instead, so every path gives the same bits.
__m256i rounded_lanes(__m512 x) {
  const __m256i converted = (__m256i)_mm512_cvtneps_pbh(x);
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  // subnormal: 0 < magnitude < 2^-126's bits, i.e. magnitude - 1 < 0x007fffff unsigned
  const __mmask16 subnormal =
      _mm512_cmplt_epu32_mask(_mm512_sub_epi32(magnitude, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x007fffff));
  if (subnormal == 0) [[likely]]
    return converted;
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  return _mm256_mask_blend_epi16(subnormal, converted, _mm512_cvtepi32_epi16(rounded));
}

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
