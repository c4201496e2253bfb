#include "autograd/generator.h"

#include <cmath>
#include <numbers>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "autograd/errors.h"

namespace tapegrad {
namespace detail {

PhiloxBlock philox(std::uint64_t key, std::uint64_t counter) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
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

}  // namespace detail

namespace {

// Uniform in [0, 1) with the full mantissa of T: one word for float, two words for double.
template <class T> constexpr std::size_t kValuesPerBlock = sizeof(T) == 4 ? 4 : 2;

template <class T>
T unit_uniform(const detail::PhiloxBlock& block, std::size_t lane) {
  if constexpr (sizeof(T) == 4) {
    return static_cast<T>(block.word[lane] >> 8) * T(1.0 / 16777216.0);
  } else {
    const std::uint64_t bits =
        (std::uint64_t{block.word[2 * lane]} << 21) ^ (std::uint64_t{block.word[2 * lane + 1]} >> 11);
    return static_cast<T>(bits) * T(1.0 / 9007199254740992.0);
  }
}

// Calls fill(block_index, block) for every block of a draw, in parallel; the values depend only on
// the block index, never on which thread computed them.
template <class Fill>
void for_each_block(std::uint64_t key, std::uint64_t first, std::size_t blocks, Fill fill) {
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks, 4096), [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t b = r.begin(); b < r.end(); ++b) fill(b, detail::philox(key, first + b));
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
  for_each_block(seed_, first + first_block, end_block - first_block, [&](std::size_t b, const detail::PhiloxBlock& block) {
    const std::size_t base = (first_block + b) * per;  // the draw's index of the block's first value
    for (std::size_t lane = 0; lane < per; ++lane) {
      const std::size_t i = base + lane;
      if (i >= begin && i < begin + n) out[i - begin] = low + span * unit_uniform<T>(block, lane);
    }
  });
}

template <class T>
void Generator::fill_normal(T* out, std::size_t n, T mean, T std) {
  constexpr std::size_t per = kValuesPerBlock<T>;  // an even number: Box-Muller makes values in pairs
  const std::size_t blocks = (n + per - 1) / per;
  for_each_block(seed_, reserve(blocks), blocks, [&](std::size_t b, const detail::PhiloxBlock& block) {
    for (std::size_t pair = 0; pair < per / 2; ++pair) {
      // 1 - u lies in (0, 1], so the logarithm is finite.
      const double u1 = 1.0 - static_cast<double>(unit_uniform<T>(block, 2 * pair));
      const double u2 = static_cast<double>(unit_uniform<T>(block, 2 * pair + 1));
      const double radius = std::sqrt(-2.0 * std::log(u1));
      const double angle = 2.0 * std::numbers::pi * u2;
      const std::size_t i = b * per + 2 * pair;
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
