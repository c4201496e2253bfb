// The replacement lives in its own file: a translation unit that sees both this delete and a
// caller's new inlines them and warns (-Wmismatched-new-delete) about free after new.
#include "tests/support/allocation_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local std::size_t allocations = 0;  // per thread: TBB's workers do not disturb a count
}  // namespace

// The whole unaligned family is replaced, so every pair of new and delete (nothrow and array
// forms too) is malloc and free: under AddressSanitizer a new of its own freed by the free below
// would be an alloc-dealloc mismatch. The aligned forms stay the library's, always paired.
void* operator new(std::size_t size) {
  ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  ++allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace tapegrad::testing {

std::size_t allocations_on_this_thread() { return allocations; }

}  // namespace tapegrad::testing
