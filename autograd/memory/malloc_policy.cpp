#include "autograd/memory/malloc_policy.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tapegrad::detail {

#if defined(__GLIBC__) && !defined(TAPEGRAD_UNDER_ASAN)
namespace {
constexpr int kMmapThreshold = 32 << 20;  // glibc's largest allowed value on 64-bit
constexpr int kTrimThreshold = 1 << 30;
}  // namespace
#endif

bool apply_malloc_policy() {
  static const bool applied = [] {
    const char* opt_out = std::getenv("TAPEGRAD_MALLOC_DEFAULTS");
    if (opt_out && std::strcmp(opt_out, "1") == 0) return false;
#if defined(__GLIBC__) && !defined(TAPEGRAD_UNDER_ASAN)
    return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1 &&
           mallopt(M_MMAP_MAX, 0) == 1;
#else
    return false;
#endif
  }();
  return applied;
}

}  // namespace tapegrad::detail
