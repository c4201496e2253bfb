// tapegrad::ArrayAllocator: the allocator of every xt::xarray<T> (and xt::xtensor<T, N>) in
// tapegrad and in the programs that use it. It lets a captured training step (StepCapture,
// autograd/memory/step_capture.h) serve an op's output from a planned arena without any op knowing.
//
// It becomes xtensor's default allocator through the macro XTENSOR_DEFAULT_ALLOCATOR(T), so it
// must be seen before any xtensor header in every translation unit: the build puts it first in
// the precompiled header, or force-includes it (-include autograd/memory/array_allocator.h) where there is
// none (autograd/CMakeLists.txt; the installed package's target does the same). tapegrad's own
// headers include it before xtensor too. The array type is part of the ABI: a translation unit that
// sees xtensor first would get another xt::xarray<T>, so that order is a compile error here.
// Include guard rather than #pragma once: the header is both in the PCH and force-included.
#ifndef TAPEGRAD_AUTOGRAD_ARRAY_ALLOCATOR_H
#define TAPEGRAD_AUTOGRAD_ARRAY_ALLOCATOR_H

#ifdef XTENSOR_DEFAULT_ALLOCATOR
#error "XTENSOR_DEFAULT_ALLOCATOR is already defined: an xtensor header was included before autograd/memory/array_allocator.h. tapegrad's xt::xarray<T> uses tapegrad::ArrayAllocator; compile with -include autograd/memory/array_allocator.h (the tapegrad::tapegrad CMake target adds it) or include this header before any xtensor header."
#endif

#include <cstddef>
#include <new>
#include <type_traits>

#if defined(XTENSOR_USE_XSIMD)
#include <xsimd/xsimd.hpp>
#endif

namespace tapegrad {

namespace detail {
// Every array's bytes come from here: from the heap, or, while a captured step runs on this
// thread, from its arena or a mapping of their own (autograd/memory/step_arena.h). 64-byte
// aligned either way.
void* allocate_array_bytes(std::size_t bytes);
void deallocate_array_bytes(void* p) noexcept;
}  // namespace detail

template <class T>
struct ArrayAllocator {
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::true_type;
  template <class U>
  struct rebind {
    using other = ArrayAllocator<U>;
  };
  // A cache line: every AVX-512 load of an array's first vector is aligned.
  static constexpr std::size_t alignment = 64;

  constexpr ArrayAllocator() noexcept = default;
  template <class U>
  constexpr ArrayAllocator(const ArrayAllocator<U>&) noexcept {}

  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(detail::allocate_array_bytes(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { detail::deallocate_array_bytes(p); }
};

template <class T, class U>
constexpr bool operator==(const ArrayAllocator<T>&, const ArrayAllocator<U>&) noexcept {
  return true;
}
template <class T, class U>
constexpr bool operator!=(const ArrayAllocator<T>&, const ArrayAllocator<U>&) noexcept {
  return false;
}

}  // namespace tapegrad

#if defined(XTENSOR_USE_XSIMD)
// xsimd (and through it xtensor's assignment loops) uses aligned loads and stores only for
// containers whose allocator it knows to be aligned; it knows only xsimd::aligned_allocator<T>.
namespace xsimd {
template <class T>
struct allocator_alignment<::tapegrad::ArrayAllocator<T>> {
  static_assert(::tapegrad::ArrayAllocator<T>::alignment >= xsimd::default_arch::alignment(),
                "tapegrad::ArrayAllocator's alignment is below the vector ISA's");
  using type = aligned_mode;
};
}  // namespace xsimd
#endif

#define XTENSOR_DEFAULT_ALLOCATOR(T) ::tapegrad::ArrayAllocator<T>

#endif  // TAPEGRAD_AUTOGRAD_ARRAY_ALLOCATOR_H
