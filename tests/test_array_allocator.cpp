// Every xt::xarray<T> uses tapegrad::ArrayAllocator (autograd/memory/array_allocator.h): the arrays of
// this translation unit (test PCH) and those the library makes (autograd/core/tensor.cpp).
#include <cstdint>
#include <type_traits>
#include <vector>

#include "autograd/core/tensor.h"
#include "autograd/memory/malloc_policy.h"
#include <xtensor/xtensor.hpp>  // after tensor.h, which sets xtensor's default allocator first
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

static_assert(std::is_same_v<xt::xarray<float>::allocator_type, ArrayAllocator<float>>);
static_assert(std::is_same_v<xt::xarray<double>::allocator_type, ArrayAllocator<double>>);
static_assert(std::is_same_v<xt::xtensor<float, 2>::allocator_type, ArrayAllocator<float>>);

bool cache_line_aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

TEST(ArrayAllocator, ArraysAreCacheLineAligned) {
  for (std::size_t n : {1, 3, 17, 1000}) {
    xt::xarray<float> a = xt::zeros<float>({n});
    EXPECT_TRUE(cache_line_aligned(a.data())) << n;
    auto t = Tensor<double>::zeros({n, 7});
    EXPECT_TRUE(cache_line_aligned(t.value().data())) << n;
  }
}

// Heap arrays sit inside malloc'ed blocks at the first 64-byte boundary past a stored pointer
// (autograd/memory/step_arena.cpp): arrays of every size up to 200 floats, alive together so that
// malloc places them at every offset modulo 64, are aligned, hold their last element, and leave
// malloc's own bookkeeping intact (glibc aborts on a block whose neighbour's header was written).
TEST(ArrayAllocator, ArraysOfEverySizeAreAlignedAndKeepTheirLastElement) {
  std::vector<xt::xarray<float>> arrays;
  for (std::size_t n = 1; n <= 200; ++n) {
    arrays.push_back(xt::xarray<float>::from_shape({n}));
    arrays.back().fill(static_cast<float>(n));
  }
  for (std::size_t n = 1; n <= 200; ++n) {
    const xt::xarray<float>& a = arrays[n - 1];
    EXPECT_TRUE(cache_line_aligned(a.data())) << n;
    EXPECT_EQ(a(0), static_cast<float>(n));
    EXPECT_EQ(a(n - 1), static_cast<float>(n));
  }
  for (std::size_t i = 0; i < arrays.size(); i += 2) arrays[i] = xt::xarray<float>();  // every other one freed first
  arrays.clear();
}

// A size below PTRDIFF_MAX that no memory can hold (2^62 bytes) reaches malloc, which returns
// null: bad_alloc, not a write of the stored pointer through null. AddressSanitizer's allocator
// reports such a size as an error instead of failing the allocation, and its builds keep the
// aligned operator new (step_arena.cpp), so the case is the Release build's.
TEST(ArrayAllocator, ASizeMallocCannotServeThrowsBadAlloc) {
#if defined(TAPEGRAD_UNDER_ASAN)
  GTEST_SKIP() << "under AddressSanitizer, which aborts on an allocation this large";
#else
  EXPECT_THROW(xt::xarray<float>::from_shape({std::size_t{1} << 60}), std::bad_alloc);
#endif
}

TEST(ArrayAllocator, AbsurdSizesThrowBadAlloc) {
  ArrayAllocator<double> allocator;
  EXPECT_THROW((void)allocator.allocate(static_cast<std::size_t>(-1) / 4), std::bad_array_new_length);
}

}  // namespace
}  // namespace tapegrad
