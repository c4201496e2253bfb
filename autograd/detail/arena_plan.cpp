#include "autograd/detail/arena_plan.h"

#include <algorithm>

namespace tapegrad::detail {

std::size_t arena_footprint(const RecordedBlock& block) {
  if (block.bytes == 0 || block.freed_before == kOutlivedStep) return 0;
  return kArenaBlockHeader + (block.bytes + 63) / 64 * 64;
}

ArenaPlan plan_arena(const std::vector<RecordedBlock>& blocks) {
  const std::size_t n = blocks.size();
  ArenaPlan plan;
  plan.offsets.assign(n, kOnHeap);
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < n; ++i) {
    if (arena_footprint(blocks[i]) > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return arena_footprint(blocks[a]) > arena_footprint(blocks[b]);
  });
  struct Range {
    std::size_t begin, end;
  };
  std::vector<std::size_t> placed;
  std::vector<Range> taken;  // scratch: the ranges of placed blocks alive at the same time
  for (std::size_t i : order) {
    const std::size_t size = arena_footprint(blocks[i]);
    taken.clear();
    for (std::size_t j : placed) {
      const bool alive_together = j < blocks[i].freed_before && i < blocks[j].freed_before;
      if (alive_together) taken.push_back({plan.offsets[j], plan.offsets[j] + arena_footprint(blocks[j])});
    }
    std::sort(taken.begin(), taken.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    std::size_t offset = 0;  // the lowest gap that fits
    for (const Range& r : taken) {
      if (r.begin >= offset + size) break;
      offset = std::max(offset, r.end);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace tapegrad::detail
