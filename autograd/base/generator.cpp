#include "autograd/base/generator.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "autograd/base/errors.h"
#include "autograd/base/spread.h"

namespace tapegrad {
namespace detail {

namespace {
constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
}  // namespace

PhiloxBlock philox(std::uint64_t key, std::uint64_t counter) {
  std::uint32_t c[4] = {static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), 0u, 0u};
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{kMul0} * c[0];
    const std::uint64_t p1 = std::uint64_t{kMul1} * c[2];
    const std::uint32_t next[4] = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<std::uint32_t>(p1),
                                   static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<std::uint32_t>(p0)};
    for (int i = 0; i < 4; ++i) c[i] = next[i];
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c[0], c[1], c[2], c[3]}};
}

// philox's rounds on kPhiloxLanes counters at once, each word a vector of 64-bit lanes holding a
// 32-bit value, so that every statement is one vector operation (the 32 x 32 -> 64-bit products
// included); one block at a time is a chain of dependent scalar multiplies.
void philox_blocks(std::uint64_t key, std::uint64_t counter, std::size_t count, std::uint32_t* words) {
  constexpr std::size_t W = kPhiloxLanes;
  using Lanes = std::uint64_t __attribute__((vector_size(W * sizeof(std::uint64_t))));
  constexpr std::uint64_t kLow = 0xFFFFFFFFu;
  for (std::size_t first = 0; first < count; first += W) {
    Lanes c0, c1, c2 = {}, c3 = {};
    for (std::size_t j = 0; j < W; ++j) {
      const std::uint64_t ctr = counter + first + j;
      c0[j] = ctr & kLow;
      c1[j] = ctr >> 32;
    }
    std::uint64_t k0 = key & kLow, k1 = key >> 32;
    for (int round = 0; round < 10; ++round) {
      const Lanes p0 = c0 * kMul0, p1 = c2 * kMul1;
      c0 = (p1 >> 32) ^ c1 ^ k0;
      c2 = (p0 >> 32) ^ c3 ^ k1;
      c1 = p1 & kLow;
      c3 = p0 & kLow;
      k0 = (k0 + kWeyl0) & kLow;
      k1 = (k1 + kWeyl1) & kLow;
    }
    for (std::size_t j = 0; j < W && first + j < count; ++j) {
      std::uint32_t* block = words + 4 * (first + j);
      block[0] = static_cast<std::uint32_t>(c0[j]);
      block[1] = static_cast<std::uint32_t>(c1[j]);
      block[2] = static_cast<std::uint32_t>(c2[j]);
      block[3] = static_cast<std::uint32_t>(c3[j]);
    }
  }
}

}  // namespace detail

namespace {

// Uniform in [0, 1) with the full mantissa of T: one word for float, two words for double.
template <class T> constexpr std::size_t kValuesPerBlock = sizeof(T) == 4 ? 4 : 2;

// Value v of consecutive Philox words (block b's words at 4b to 4b + 3).
template <class T>
T unit_uniform(const std::uint32_t* words, std::size_t v) {
  if constexpr (sizeof(T) == 4) {
    return static_cast<T>(words[v] >> 8) * T(1.0 / 16777216.0);
  } else {
    const std::uint64_t bits = (std::uint64_t{words[2 * v]} << 21) ^ (std::uint64_t{words[2 * v + 1]} >> 11);
    return static_cast<T>(bits) * T(1.0 / 9007199254740992.0);
  }
}

// Calls fill(first_index, count, words) over every block of a draw, kPhiloxLanes blocks (fewer
// at the end of a task) at a time, in parallel; the values depend only on the block index, never
// on which thread computed them.
template <class Fill>
void for_each_block(std::uint64_t key, std::uint64_t first, std::size_t blocks, Fill fill) {
  const auto fill_range = [&](std::size_t begin, std::size_t end) {
    std::uint32_t words[4 * detail::kPhiloxLanes];
    for (std::size_t b = begin; b < end; b += detail::kPhiloxLanes) {
      const std::size_t count = std::min(detail::kPhiloxLanes, end - b);
      detail::philox_blocks(key, first + b, count, words);
      fill(b, count, words);
    }
  };
  constexpr std::size_t kBlocksPerTask = 4096;
  if (blocks <= kBlocksPerTask) {
    fill_range(0, blocks);
    return;
  }
  static SpreadRule rule;  // one per kind of draw
  run_spread(
      rule, blocks, [&] { fill_range(0, blocks); },
      [&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks, kBlocksPerTask),
                          [&](const tbb::blocked_range<std::size_t>& r) { fill_range(r.begin(), r.end()); });
      });
}

}  // namespace

template <class T>
void Generator::fill_uniform(T* out, std::size_t n, T low, T high) {
  fill_uniform_slice(out, n, 0, n, low, high);
}

template <class T>
void Generator::fill_uniform_slice(T* out, std::size_t total, std::size_t begin, std::size_t n, T low, T high) {
  if (begin > total || n > total - begin) {
    throw ValueError("Generator::fill_uniform_slice: values [" + std::to_string(begin) + ", " + std::to_string(begin) +
                     " + " + std::to_string(n) + ") are not within a draw of " + std::to_string(total));
  }
  constexpr std::size_t per = kValuesPerBlock<T>;
  const std::uint64_t first = reserve(total / per + (total % per != 0));  // no overflow near SIZE_MAX
  if (n == 0) return;
  // Only the blocks that hold values [begin, begin + n) of the draw are computed.
  const std::size_t first_block = begin / per, end_block = (begin + n + per - 1) / per;
  const T span = high - low;
  for_each_block(seed_, first + first_block, end_block - first_block,
                 [&](std::size_t b, std::size_t count, const std::uint32_t* words) {
                   const std::size_t base = (first_block + b) * per;  // the draw's index of the first value
                   if (base >= begin && base + count * per <= begin + n) {  // all but the slice's ends
                     T* dst = out + (base - begin);
                     for (std::size_t v = 0; v < count * per; ++v) dst[v] = low + span * unit_uniform<T>(words, v);
                     return;
                   }
                   for (std::size_t v = 0; v < count * per; ++v) {
                     const std::size_t i = base + v;
                     if (i >= begin && i < begin + n) out[i - begin] = low + span * unit_uniform<T>(words, v);
                   }
                 });
}

template <class T>
void Generator::fill_normal(T* out, std::size_t n, T mean, T std) {
  constexpr std::size_t per = kValuesPerBlock<T>;  // an even number: Box-Muller makes values in pairs
  const std::size_t blocks = (n + per - 1) / per;
  for_each_block(seed_, reserve(blocks), blocks, [&](std::size_t first, std::size_t count, const std::uint32_t* words) {
    for (std::size_t v = 0; v < count * per; v += 2) {
      // 1 - u lies in (0, 1], so the logarithm is finite.
      const double u1 = 1.0 - static_cast<double>(unit_uniform<T>(words, v));
      const double u2 = static_cast<double>(unit_uniform<T>(words, v + 1));
      const double radius = std::sqrt(-2.0 * std::log(u1));
      const double angle = 2.0 * std::numbers::pi * u2;
      const std::size_t i = first * per + v;
      if (i < n) out[i] = mean + std * static_cast<T>(radius * std::cos(angle));
      if (i + 1 < n) out[i + 1] = mean + std * static_cast<T>(radius * std::sin(angle));
    }
  });
}

std::uint64_t Generator::next_u64() {
  const auto block = detail::philox(seed_, reserve(1));
  return (std::uint64_t{block.word[0]} << 32) | block.word[1];
}

std::int64_t Generator::randint(std::int64_t low, std::int64_t high) {
  if (high <= low) {
    throw ValueError("Generator::randint: empty range [" + std::to_string(low) + ", " + std::to_string(high) + ")");
  }
  const auto span = static_cast<std::uint64_t>(high - low);
  return low + static_cast<std::int64_t>(next_u64() % span);  // bias below 2^-40 for spans under 2^24
}

template void Generator::fill_uniform<float>(float*, std::size_t, float, float);
template void Generator::fill_uniform<double>(double*, std::size_t, double, double);
template void Generator::fill_uniform_slice<float>(float*, std::size_t, std::size_t, std::size_t, float, float);
template void Generator::fill_uniform_slice<double>(double*, std::size_t, std::size_t, std::size_t, double, double);
template void Generator::fill_normal<float>(float*, std::size_t, float, float);
template void Generator::fill_normal<double>(double*, std::size_t, double, double);

}  // namespace tapegrad
