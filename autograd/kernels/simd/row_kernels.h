#pragma once
// Shared scaffolding of the row kernels (softmax, layer_norm, masked_fill, reductions, losses, ...):
// how a tensor is cut into independent rows and how those rows are spread over TBB.
//
// Determinism: every function here hands each row (or lane, or chunk) to exactly one task, which
// processes it in a fixed order, and the split depends only on the shape, never on the thread
// count. So a kernel built on them gives the same bits with 1 thread or 64.
#include <algorithm>
#include <cstddef>
#include <type_traits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "autograd/base/errors.h"
#include "autograd/base/spread.h"

namespace tapegrad::kernels {

// Below this many elements a task is not worth spawning: rows are grouped until a task holds it.
inline constexpr std::size_t kTaskElements = 1 << 14;

// Calls fn(begin, end) over [0, count): in parallel with tasks of at least
// kTaskElements / elements_per_item items when the kernel's SpreadRule finds that faster, else
// once on the calling thread. Each item is handled by one task, so the way never changes a bit.
template <class Fn>
void parallel_items(std::size_t count, std::size_t elements_per_item, Fn&& fn) {
  if (count == 0) return;
  const std::size_t grain = std::max<std::size_t>(1, kTaskElements / std::max<std::size_t>(1, elements_per_item));
  if (count <= grain) {
    fn(std::size_t{0}, count);
    return;
  }
  static SpreadRule rule;  // one per kernel: each Fn is its own instantiation
  run_spread(
      rule, count * elements_per_item, [&] { fn(std::size_t{0}, count); },
      [&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, grain),
                          [&](const tbb::blocked_range<std::size_t>& r) { fn(r.begin(), r.end()); });
      });
}

// A row-major tensor seen around one axis as [outer, n, inner]. A "lane" is one 1-D row along the
// axis: n elements at stride `inner`. There are outer * inner lanes.
struct AxisLayout {
  std::size_t outer = 1, n = 1, inner = 1;
};

inline AxisLayout axis_layout(const Shape& shape, std::size_t axis) {
  AxisLayout l;
  for (std::size_t d = 0; d < axis; ++d) l.outer *= shape[d];
  l.n = shape[axis];
  for (std::size_t d = axis + 1; d < shape.size(); ++d) l.inner *= shape[d];
  return l;
}

// Lanes are processed in blocks of up to kLaneBlock neighbours, so that a kernel over a non-last
// axis walks memory contiguously (the inner loop runs across neighbouring lanes) and keeps its
// per-lane accumulators in a fixed-size local array.
inline constexpr std::size_t kLaneBlock = 64;

using One = std::integral_constant<std::size_t, 1>;

// Calls fn(offset, stride, width) for every block of `width` adjacent lanes, in parallel: lane j of
// the block has its element k at offset + k * stride + j. When the axis is the last one (inner ==
// 1), stride and width are the compile-time constant One, so the kernel's loops become plain
// contiguous loops over one row; otherwise they are std::size_t with width <= kLaneBlock.
template <class Fn>
void for_each_lane_block(const AxisLayout& l, Fn&& fn) {
  if (l.inner == 1) {
    parallel_items(l.outer, l.n, [&](std::size_t begin, std::size_t end) {
      for (std::size_t o = begin; o < end; ++o) fn(o * l.n, One{}, One{});
    });
    return;
  }
  const std::size_t blocks_per_outer = (l.inner + kLaneBlock - 1) / kLaneBlock;
  parallel_items(l.outer * blocks_per_outer, l.n * kLaneBlock, [&](std::size_t begin, std::size_t end) {
    for (std::size_t t = begin; t < end; ++t) {
      const std::size_t o = t / blocks_per_outer, first_lane = (t % blocks_per_outer) * kLaneBlock;
      fn(o * l.n * l.inner + first_lane, l.inner, std::min(kLaneBlock, l.inner - first_lane));
    }
  });
}

}  // namespace tapegrad::kernels
