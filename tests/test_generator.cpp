#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "autograd/base/generator.h"
#include "autograd/kernels/parallel.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

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

TEST(Generator, PhiloxBlocksAreTheBlocksOneAtATime) {
  // Counts below, at and above a batch of lanes, a counter whose low word wraps inside the batch,
  // and keys with both halves set.
  for (const std::uint64_t key : {std::uint64_t{0}, std::uint64_t{0x0123456789ABCDEFu}}) {
    for (const std::uint64_t counter : {std::uint64_t{0}, std::uint64_t{0xFFFFFFF8u}, ~std::uint64_t{0} - 40}) {
      for (const std::size_t count : {std::size_t{1}, detail::kPhiloxLanes, 2 * detail::kPhiloxLanes + 3}) {
        std::vector<std::uint32_t> words(4 * count);
        detail::philox_blocks(key, counter, count, words.data());
        for (std::size_t b = 0; b < count; ++b) {
          const auto one = detail::philox(key, counter + b);
          for (std::size_t w = 0; w < 4; ++w) {
            ASSERT_EQ(words[4 * b + w], one.word[w]) << "key " << key << " counter " << counter + b << " word " << w;
          }
        }
      }
    }
  }
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

// Parts of one draw, at offsets inside a Philox block (4 floats or 2 doubles per block), hold the
// draw's values, and every part advances the state by the whole draw.
template <class T>
void check_slices_of_one_draw() {
  constexpr std::size_t kValuesPerBlock = sizeof(T) == 4 ? 4 : 2;  // one float per 32-bit word
  const std::size_t total = 23;
  Generator whole(5);
  std::vector<T> expected(total);
  whole.fill_uniform(expected.data(), total, T(-1), T(2));
  for (const auto& [begin, n] : std::vector<std::pair<std::size_t, std::size_t>>{{0, 23}, {0, 3}, {3, 11}, {14, 9}, {5, 1}, {23, 0}}) {
    SCOPED_TRACE(std::to_string(begin) + "+" + std::to_string(n));
    Generator part(5);
    std::vector<T> got(n);
    part.fill_uniform_slice(got.data(), total, begin, n, T(-1), T(2));
    EXPECT_EQ(got, std::vector<T>(expected.begin() + begin, expected.begin() + begin + n));
    EXPECT_EQ(part.offset(), whole.offset());
  }
  Generator gen(5);
  T out[4];
  EXPECT_TRUE(throws_with<ValueError>([&] { gen.fill_uniform_slice(out, total, 21, 3); },
                                      {"fill_uniform_slice", "[21, 21 + 3)", "draw of 23"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { gen.fill_uniform_slice(out, total, 24, 0); }, {"draw of 23"}));
  EXPECT_EQ(gen.offset(), 0u);  // a refused part draws nothing
  // A draw as large as size_t allows reserves its blocks without overflowing (the part is empty).
  gen.fill_uniform_slice(out, std::numeric_limits<std::size_t>::max(), 0, 0);
  EXPECT_EQ(gen.offset(), std::numeric_limits<std::size_t>::max() / kValuesPerBlock + 1);
}

TEST(Generator, ASliceOfADrawHoldsThoseValuesOfTheWholeDraw) {
  check_slices_of_one_draw<float>();
  check_slices_of_one_draw<double>();
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
  const testing_support::ThreadCountTest thread_count_test;
  std::vector<float> one(1 << 20), two(1 << 20);
  set_num_threads(1);
  Generator(11).fill_normal(one.data(), one.size());
  set_num_threads(2);
  Generator(11).fill_normal(two.data(), two.size());
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
