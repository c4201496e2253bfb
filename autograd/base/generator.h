#pragma once
// Generator: the one source of random numbers (init, dropout, data). Counter-based (Philox4x32-10),
// so a draw of n numbers is a pure function of (seed, offset): parallel fills give the same values
// whatever the thread count, and the state is two integers that a checkpoint can save.
// Not xt::random: that is a lazy global generator (reading an element twice gives two values).
// Threads: draws from one Generator shared by several threads never repeat a number (each draw
// reserves its counter blocks atomically), but which thread gets which numbers depends on timing;
// give each thread its own Generator for reproducible runs. set_state and copies are not
// synchronised with concurrent draws.
#include <atomic>
#include <cstdint>
#include <cstddef>

namespace tapegrad {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}
  Generator(const Generator& other) : seed_(other.seed_), offset_(other.offset()) {}
  Generator& operator=(const Generator& other) {
    set_state(other.seed_, other.offset());
    return *this;
  }

  std::uint64_t seed() const { return seed_; }
  // Number of 128-bit Philox blocks consumed so far; with the seed, the whole state.
  std::uint64_t offset() const { return offset_.load(std::memory_order_relaxed); }
  void set_state(std::uint64_t seed, std::uint64_t offset) {
    seed_ = seed;
    offset_.store(offset, std::memory_order_relaxed);
  }

  // Fills out[0..n) with uniform values in [low, high).
  template <class T> void fill_uniform(T* out, std::size_t n, T low = T(0), T high = T(1));
  // Fills out[0..n) with values [begin, begin + n) of a fill_uniform draw of `total` values, and
  // advances the state by the whole draw: processes that each take their part of one draw get
  // the values a single process would, and stay in step (dropout over a batch split across
  // data-parallel ranks). ValueError when the part is not within the draw.
  template <class T>
  void fill_uniform_slice(T* out, std::size_t total, std::size_t begin, std::size_t n, T low = T(0), T high = T(1));
  // Fills out[0..n) with normal values N(mean, std^2) (Box-Muller).
  template <class T> void fill_normal(T* out, std::size_t n, T mean = T(0), T std = T(1));
  // A uniform integer in [low, high); throws ValueError when the range is empty.
  std::int64_t randint(std::int64_t low, std::int64_t high);
  // 64 random bits, e.g. the seed of a child generator (a dropout module's own stream).
  std::uint64_t next_u64();

 private:
  // The first block of a draw of `blocks` blocks, reserved so no other draw uses them.
  std::uint64_t reserve(std::uint64_t blocks) { return offset_.fetch_add(blocks, std::memory_order_relaxed); }

  std::uint64_t seed_;
  std::atomic<std::uint64_t> offset_{0};
};

namespace detail {
// The four 32-bit words of Philox4x32-10 at block `counter` under `key`.
struct PhiloxBlock { std::uint32_t word[4]; };
PhiloxBlock philox(std::uint64_t key, std::uint64_t counter);
// philox(key, counter + b)'s words into words[4b, 4b + 4) for b in [0, count): the same words,
// computed kPhiloxLanes blocks at a time so that the rounds vectorise across blocks.
inline constexpr std::size_t kPhiloxLanes = 16;
void philox_blocks(std::uint64_t key, std::uint64_t counter, std::size_t count, std::uint32_t* words);
}  // namespace detail

}  // namespace tapegrad
