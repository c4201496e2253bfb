#include <cmath>
#include <sstream>

#include "autograd/memory/malloc_policy.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

TEST(Tensor, CreationHelpers) {
  EXPECT_EQ(Tensor<float>::zeros({2, 3}).value(), (xt::xarray<float>{{0, 0, 0}, {0, 0, 0}}));
  EXPECT_EQ(Tensor<double>::ones({2}).value(), (xt::xarray<double>{1, 1}));
  EXPECT_EQ(Tensor<double>::full({2}, 7.5).value(), (xt::xarray<double>{7.5, 7.5}));
  EXPECT_EQ(Tensor<double>::arange(0, 5, 2).value(), (xt::xarray<double>{0, 2, 4}));
  EXPECT_TRUE(throws_with<ValueError>([] { Tensor<double>::arange(0, 1, 0); }, {"arange", "step"}));
  EXPECT_TRUE(Tensor<double>::zeros({2}, true).requires_grad());
  EXPECT_FALSE(Tensor<double>::zeros({2}).requires_grad());
}

TEST(Tensor, ShapeQueries) {
  const auto t = Tensor<float>::zeros({2, 3, 4});
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.ndim(), 3u);
  EXPECT_EQ(t.numel(), 24u);
  EXPECT_EQ(t.size(-1), 4u);
  EXPECT_EQ(t.size(0), 2u);
  EXPECT_TRUE(throws_with<ValueError>([&] { t.size(3); }, {"axis 3", "[2,3,4]"}));
  EXPECT_EQ(Tensor<float>::zeros({}).numel(), 1u);
}

TEST(Tensor, RandomCreationIsSeededAndHasTheRightMoments) {
  Generator g1(42), g2(42);
  const auto a = Tensor<double>::randn({100000}, g1, 1.0, 2.0);
  const auto b = Tensor<double>::randn({100000}, g2, 1.0, 2.0);
  EXPECT_EQ(a.value(), b.value());
  double mean = 0, var = 0;
  for (double v : a.value()) mean += v;
  mean /= 1e5;
  for (double v : a.value()) var += (v - mean) * (v - mean);
  var /= 1e5;
  EXPECT_NEAR(mean, 1.0, 0.03);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.03);
  const auto u = Tensor<float>::uniform({1000}, g1, -3.0f, -2.0f);
  for (float v : u.value()) {
    EXPECT_GE(v, -3.0f);
    EXPECT_LT(v, -2.0f);
  }
  EXPECT_TRUE(throws_with<ValueError>([&] { Tensor<float>::uniform({2}, g1, 1.0f, 1.0f); }, {"uniform", "low"}));
}

TEST(Tensor, ItemReturnsThePlainScalar) {
  EXPECT_DOUBLE_EQ(Tensor<double>::full({1, 1}, 4.5).item(), 4.5);
  EXPECT_TRUE(throws_with<ValueError>([] { Tensor<double>::zeros({2, 2}).item(); }, {"item", "[2,2]", "4 elements"}));
}

TEST(Tensor, HandlesShareOneNode) {
  Tensor<double> a = Tensor<double>::zeros({2});
  Tensor<double> b = a;
  b.mutable_value()(0) = 5.0;
  EXPECT_DOUBLE_EQ(a.value()(0), 5.0);
  EXPECT_TRUE(a.same_node(b));
}

TEST(Tensor, DetachCopiesValueAndCutsHistory) {
  const Tensor<double> x(xt::xarray<double>{1.0, 2.0}, true);
  GradientTape tape;
  const auto y = x * 2.0;
  const auto d = y.detach();
  EXPECT_EQ(d.value(), y.value());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_FALSE(d.requires_grad());
  EXPECT_FALSE(d.same_node(y));
}

TEST(Tensor, ConversionBetweenFloatAndDoubleCarriesGradient) {
  const Tensor<float> x(xt::xarray<float>{1.5f, -2.0f}, true);
  GradientTape tape;
  const Tensor<double> y = x.to<double>();
  EXPECT_EQ(y.value(), (xt::xarray<double>{1.5, -2.0}));
  tape.backward(y, xt::xarray<double>{3.0, 4.0});
  EXPECT_EQ(x.grad(), (xt::xarray<float>{3.0f, 4.0f}));
}

TEST(Tensor, GradWithoutBackwardIsAClearError) {
  const auto x = Tensor<double>::zeros({2}, true);
  EXPECT_TRUE(throws_with<TapeError>([&] { x.grad(); }, {"grad", "no gradient", "backward"}));
  const auto c = Tensor<double>::zeros({2}).set_name("c");
  EXPECT_TRUE(throws_with<TapeError>([&] { c.grad(); }, {"'c'", "does not require"}));
}

TEST(Tensor, UndefinedTensorIsAClearError) {
  const Tensor<double> none;
  EXPECT_FALSE(none.defined());
  EXPECT_TRUE(throws_with<ValueError>([&] { none.shape(); }, {"undefined"}));
  EXPECT_EQ(none.describe(), "<undefined>");
}

TEST(Tensor, NamesAppearInDescriptions) {
  auto w = Tensor<float>::zeros({3, 4});
  w.set_name("weight");
  EXPECT_EQ(w.describe(), "'weight' [3,4]");
}

template <class T> std::string printed(const Tensor<T>& t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

TEST(Tensor, PrintsWhatItIsThenItsValues) {
  auto w = Tensor<double>(xt::xarray<double>{{1, 2}, {3, 4}}, true).set_name("w");
  EXPECT_EQ(printed(w), "tensor 'w' [2,2] float64 requires_grad\n{{ 1.,  2.},\n { 3.,  4.}}");
  GradientTape tape;
  const Tensor<double> y = mul(w, w);
  EXPECT_EQ(printed(y), "tensor [2,2] float64 requires_grad, made by mul\n{{  1.,   4.},\n {  9.,  16.}}");
  tape.backward(sum(y));
  EXPECT_EQ(printed(w), "tensor 'w' [2,2] float64 requires_grad (has a gradient)\n{{ 1.,  2.},\n { 3.,  4.}}");
  EXPECT_EQ(printed(Tensor<float>(xt::xarray<float>{0.5f})), "tensor [1] float32\n{ 0.5}");
  EXPECT_EQ(printed(Tensor<float>()), "tensor (undefined)");
}

TEST(Tensor, PrintingALargeTensorSummarisesIt) {
  const std::string text = printed(Tensor<float>::zeros({100, 100}));
  EXPECT_NE(text.find("..."), std::string::npos);
  EXPECT_LT(text.size(), 2000u);
}

TEST(Tensor, SetGradReplacesTheGradientAndBackwardAddsToIt) {
  auto x = Tensor<double>(xt::xarray<double>{1, 2}, true).set_name("x");
  x.set_grad(xt::xarray<double>{10, 20});
  EXPECT_EQ(x.grad(), (xt::xarray<double>{10, 20}));
  GradientTape tape;
  tape.backward(sum(mul(x, x)));  // d/dx = 2x = {2, 4}
  EXPECT_EQ(x.grad(), (xt::xarray<double>{12, 24}));
  x.set_grad(xt::xarray<double>{0, -1});
  EXPECT_EQ(x.grad(), (xt::xarray<double>{0, -1}));
  EXPECT_TRUE(throws_with<ValueError>([&] { x.set_grad(xt::xarray<double>{1, 2, 3}); },
                                      {"set_grad", "[3]", "'x' [2]", "shape"}));
  EXPECT_EQ(x.grad(), (xt::xarray<double>{0, -1}));  // a refused gradient changes nothing
}

TEST(MallocPolicy, AppliedAtLoadUnlessOptedOut) {
  // ctest does not set TAPEGRAD_MALLOC_DEFAULTS, so with glibc's malloc every setting was
  // accepted at load time; under AddressSanitizer (its own allocator) nothing is applied.
  EXPECT_EQ(detail::apply_malloc_policy(), detail::kMallocPolicySupported);
}

#if defined(__GLIBC__) && !defined(TAPEGRAD_UNDER_ASAN)
// A block larger than glibc's largest mmap threshold still comes from the heap, so that freeing
// it does not hand its pages back to the OS only to fault them in again next step.
TEST(MallocPolicy, BlocksAboveTheLargestMmapThresholdComeFromTheHeap) {
  const std::size_t mapped_before = mallinfo2().hblkhd;
  void* block = std::malloc(std::size_t{64} << 20);
  ASSERT_NE(block, nullptr);
  const std::size_t mapped_during = mallinfo2().hblkhd;
  std::free(block);
  EXPECT_EQ(mapped_during, mapped_before);
}
#endif

}  // namespace
}  // namespace tapegrad
