#pragma once
// exp of floats, bit for bit what glibc's expf returns, in vectors.
//
// Why: exp_inplace (simd_span.h) runs whole vectors through xsimd::exp and the rest of a span
// through std::exp. Attention's rows at sequence length 10 are shorter than one AVX-512 vector, so
// every exp of the copy task's softmaxes was a scalar library call (3-5% of the tiny training
// step). xsimd's exp rounds differently from glibc's, so using it for the rest would change the
// results. glibc's expf (from Arm's optimized-routines) evaluates 2^(k/32) * p(r) in double with a
// 32-entry table; the same steps in double vectors, with the fused multiply-adds glibc's FMA build
// uses, give the same float for every one of the 2^32 inputs (checked on glibc 2.36, AVX-512 and
// AVX2, bench/RESULTS.md, issue 40; tests/test_libm_expf.cpp checks a sample against std::exp).
#include <cstddef>

namespace tapegrad::kernels::simd {

// p[i] = std::exp(p[i]) for i < n, with std::exp's bits. Vectorised where the build targets FMA with
// AVX2 or AVX-512 (the CPUs whose glibc picks its FMA expf); elsewhere it calls std::exp.
void libm_expf_inplace(float* p, std::size_t n);

}  // namespace tapegrad::kernels::simd
