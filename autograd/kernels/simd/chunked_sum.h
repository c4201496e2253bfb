#pragma once
// A parallel sum whose bits do not depend on the thread count: [0, n) is cut into chunks of a
// fixed size, one task sums each chunk in index order, and the chunk sums are added in order.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "autograd/kernels/simd/row_kernels.h"

namespace tapegrad::kernels {

// Elements per chunk: fixed, so the partition (and every bit of the result) is the same at any
// thread count; large enough that a chunk outweighs the cost of scheduling it.
inline constexpr std::size_t kSumChunk = 4096;

// sum_{i < n} term(i), accumulated in T.
template <class T, class Term>
T chunked_sum(std::size_t n, const Term& term) {
  const std::size_t chunks = (n + kSumChunk - 1) / kSumChunk;
  std::vector<T> partial(chunks, T(0));
  // Chunks are grouped into tasks (and a small sum runs on the calling thread); each chunk's sum
  // is the same whichever task computes it.
  parallel_items(chunks, kSumChunk, [&](std::size_t first, std::size_t last) {
    for (std::size_t c = first; c < last; ++c) {
      const std::size_t end = std::min(n, (c + 1) * kSumChunk);
      T s = T(0);
      for (std::size_t i = c * kSumChunk; i < end; ++i) s += term(i);
      partial[c] = s;
    }
  });
  T total = T(0);
  for (const T s : partial) total += s;
  return total;
}

}  // namespace tapegrad::kernels
