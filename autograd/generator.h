#pragma once
// Generator: the one source of random numbers (init, dropout, data). Counter-based (Philox4x32-10),
// so a draw of n numbers is a pure function of (seed, offset): parallel fills give the same values
// whatever the thread count, and the state is two integers that a checkpoint can save.
// Not xt::random: that is a lazy global generator (reading an element twice gives two values).
#include <cstdint>
#include <cstddef>

namespace tapegrad {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}

  std::uint64_t seed() const { return seed_; }
  // Number of 128-bit Philox blocks consumed so far; with the seed, the whole state.
  std::uint64_t offset() const { return offset_; }
  void set_state(std::uint64_t seed, std::uint64_t offset) { seed_ = seed; offset_ = offset; }

  // Fills out[0..n) with uniform values in [low, high).
  template <class T> void fill_uniform(T* out, std::size_t n, T low = T(0), T high = T(1));
  // Fills out[0..n) with normal values N(mean, std^2) (Box-Muller).
  template <class T> void fill_normal(T* out, std::size_t n, T mean = T(0), T std = T(1));
  // A uniform integer in [low, high); throws ValueError when the range is empty.
  std::int64_t randint(std::int64_t low, std::int64_t high);
  // 64 random bits, e.g. the seed of a child generator (a dropout module's own stream).
  std::uint64_t next_u64();

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

namespace detail {
// The four 32-bit words of Philox4x32-10 at block `counter` under `key`.
struct PhiloxBlock { std::uint32_t word[4]; };
PhiloxBlock philox(std::uint64_t key, std::uint64_t counter);
}  // namespace detail

}  // namespace tapegrad
