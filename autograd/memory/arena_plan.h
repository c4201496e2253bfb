#pragma once
// Where each array of a recorded training step goes in one arena: the offsets of blocks whose
// lifetimes overlap never overlap, so a replay of the same step needs no heap at all. The plan is
// greedy, computed once per recording: blocks are placed one by one at the lowest offset that
// fits, in two orders (largest first, as ggml's graph allocator does; by breadth, as TFLite's
// arena planner does), and the smaller plan wins.
#include <cstddef>
#include <limits>
#include <vector>

namespace tapegrad::detail {

// One array allocated while a step was recorded, in allocation order: block i is the step's
// i-th allocation, alive from allocation i until just before allocation freed_before.
struct RecordedBlock {
  std::size_t bytes;
  std::size_t freed_before;
};
// A block still alive when the step ended (a parameter's gradient, Adam's moments, the loss the
// step returned): it stays on the heap, since nothing says when it will be freed.
inline constexpr std::size_t kOutlivedStep = std::numeric_limits<std::size_t>::max();

// Bytes in front of every arena block: which arena and which block it is, so that freeing it,
// on any thread, needs no lookup. A cache line, to keep every block 64-byte aligned.
inline constexpr std::size_t kArenaBlockHeader = 64;

struct ArenaPlan {
  // Per recorded block: where its header starts in the arena, or kOnHeap.
  std::vector<std::size_t> offsets;
  std::size_t arena_bytes = 0;
};
inline constexpr std::size_t kOnHeap = std::numeric_limits<std::size_t>::max();

// The arena bytes block i takes (header and its bytes rounded up to 64), 0 when it stays on the
// heap (outlived the step, or empty).
std::size_t arena_footprint(const RecordedBlock& block);

ArenaPlan plan_arena(const std::vector<RecordedBlock>& blocks);

}  // namespace tapegrad::detail
