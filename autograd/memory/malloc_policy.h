#pragma once
// How tapegrad asks glibc's malloc to treat the large, short-lived buffers of a training step.
//
// Every op returns a fresh array and every backward frees them again: a [4096, 512] float step
// allocates and frees tens of MiB. With glibc's defaults, blocks over 128 KiB (raised dynamically,
// but only up to the largest block freed so far) are mmap'ed and unmapped on free, and the heap top
// is trimmed back to the OS beyond 2x that threshold, so each step pays the page faults of first
// touching its memory again, most of the time of softmax / layer_norm / masked_fill
// forward+backward on [4096, 512] (bench/RESULTS.md, "malloc policy at load"). So at load time tapegrad serves every block from the heap:
// the mmap threshold at its largest (32 MiB), and mmap switched off for larger blocks too
// (M_MMAP_MAX 0; glibc cannot raise the threshold further), since an einsum output at seq 128
// ([128, 128, 80, 8] floats, 42 MB) paid its page faults again every step, most of that einsum's
// forward. Freed heap up to 1 GiB is kept (trim threshold). Memory stays with the process at its
// high-water mark rather than going back and forth.
//
// The settings are process-wide. Set TAPEGRAD_MALLOC_DEFAULTS=1 in the environment to leave
// glibc's defaults (or its GLIBC_TUNABLES) alone. No effect on non-glibc systems, nor under
// AddressSanitizer, whose own allocator replaces malloc (its mallopt does nothing).
#include <cstdlib>  // defines __GLIBC__ on glibc systems

namespace tapegrad::detail {

// Whether the policy can take effect in this build: glibc's malloc, not a sanitizer's.
#if defined(__SANITIZE_ADDRESS__)
#define TAPEGRAD_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAPEGRAD_UNDER_ASAN 1
#endif
#endif
#if defined(__GLIBC__) && !defined(TAPEGRAD_UNDER_ASAN)
inline constexpr bool kMallocPolicySupported = true;
#else
inline constexpr bool kMallocPolicySupported = false;
#endif

// Applies the policy once (idempotent); returns whether it was applied.
bool apply_malloc_policy();

}  // namespace tapegrad::detail
