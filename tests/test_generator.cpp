#include <algorithm>
#include <set>
#include <vector>

#include "autograd/generator.h"
#include "autograd/kernels/parallel.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

TEST(Generator, PhiloxMatchesThePublishedKnownAnswer) {
  // Random123's known-answer test for philox4x32-10 with counter 0 and key 0.
  const auto block = detail::philox(0, 0);
  EXPECT_EQ(block.word[0], 0x6627e8d5u);
  EXPECT_EQ(block.word[1], 0xe169c58du);
  EXPECT_EQ(block.word[2], 0xbc57ac4cu);
  EXPECT_EQ(block.word[3], 0x9b00dbd8u);
}

TEST(Generator, SameSeedSameNumbersDifferentSeedDifferentNumbers) {
  std::vector<float> a(1000), b(1000), c(1000);
  Generator(7).fill_uniform(a.data(), a.size());
  Generator(7).fill_uniform(b.data(), b.size());
  Generator(8).fill_uniform(c.data(), c.size());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Generator, ConsecutiveDrawsDiffer) {
  Generator gen(1);
  std::vector<double> a(10), b(10);
  gen.fill_normal(a.data(), a.size());
  gen.fill_normal(b.data(), b.size());
  EXPECT_NE(a, b);
}

TEST(Generator, StateRestoresTheSequence) {
  Generator gen(3);
  std::vector<float> skip(5), first(100), again(100);
  gen.fill_uniform(skip.data(), skip.size());
  const auto seed = gen.seed();
  const auto offset = gen.offset();
  gen.fill_uniform(first.data(), first.size());
  Generator restored;
  restored.set_state(seed, offset);
  restored.fill_uniform(again.data(), again.size());
  EXPECT_EQ(first, again);
}

TEST(Generator, UniformCoversTheRangeEvenly) {
  std::vector<double> v(200000);
  Generator(5).fill_uniform(v.data(), v.size(), 2.0, 4.0);
  std::vector<int> bins(10, 0);
  for (double x : v) {
    ASSERT_GE(x, 2.0);
    ASSERT_LT(x, 4.0);
    ++bins[static_cast<int>((x - 2.0) / 0.2)];
  }
  for (int count : bins) EXPECT_NEAR(count, 20000, 800);
}

TEST(Generator, ResultsDoNotDependOnTheThreadCount) {
  std::vector<float> one(1 << 20), two(1 << 20);
  set_num_threads(1);
  Generator(11).fill_normal(one.data(), one.size());
  set_num_threads(2);
  Generator(11).fill_normal(two.data(), two.size());
  set_num_threads(0);
  EXPECT_EQ(one, two);
}

TEST(Generator, RandintStaysInRangeAndRejectsEmptyRanges) {
  Generator gen(9);
  std::set<std::int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto v = gen.randint(2, 11);
    ASSERT_GE(v, 2);
    ASSERT_LT(v, 11);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_TRUE(testing::throws_with<ValueError>([&] { gen.randint(3, 3); }, {"randint", "empty range"}));
}

}  // namespace
}  // namespace tapegrad
