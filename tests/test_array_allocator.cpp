// Every xt::xarray<T> uses tapegrad::ArrayAllocator (autograd/memory/array_allocator.h): the arrays of
// this translation unit (test PCH) and those the library makes (autograd/core/tensor.cpp).
#include <cstdint>
#include <type_traits>

#include "autograd/core/tensor.h"
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

TEST(ArrayAllocator, AbsurdSizesThrowBadAlloc) {
  ArrayAllocator<double> allocator;
  EXPECT_THROW((void)allocator.allocate(static_cast<std::size_t>(-1) / 4), std::bad_array_new_length);
}

}  // namespace
}  // namespace tapegrad
