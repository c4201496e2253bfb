#include "autograd/memory/arena_plan.h"

#include <algorithm>
#include <numeric>

namespace tapegrad::detail {

std::size_t arena_footprint(const RecordedBlock& block) {
  if (block.bytes == 0 || block.freed_before == kOutlivedStep) return 0;
  return kArenaBlockHeader + (block.bytes + 63) / 64 * 64;
}

namespace {

// The arena blocks, largest first.
std::vector<std::size_t> by_size(const std::vector<RecordedBlock>& blocks) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (arena_footprint(blocks[i]) > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return arena_footprint(blocks[a]) > arena_footprint(blocks[b]);
  });
  return order;
}

// Greedy by breadth (Pisarchyk and Lee, "Efficient Memory Management for Deep Neural Net
// Inference", 2020; TFLite's GreedyByBreadth): the times at which the most bytes are alive come
// first, and each brings its blocks not yet ordered, largest first. The blocks alive at the peak
// are then placed side by side before anything smaller can split their range. On a Transformer
// step, whose peak is the forward's saved activations, this reaches the live peak where largest
// first ends above it (bench/RESULTS.md, section "the paper step's RSS").
std::vector<std::size_t> by_breadth(const std::vector<RecordedBlock>& blocks, const std::vector<std::size_t>& sized) {
  const std::size_t n = blocks.size();
  std::vector<std::size_t> breadth(n + 1, 0);  // bytes alive at each time (an allocation's index)
  for (std::size_t i : sized) {
    breadth[i] += arena_footprint(blocks[i]);
    breadth[blocks[i].freed_before] -= arena_footprint(blocks[i]);
  }
  std::partial_sum(breadth.begin(), breadth.end(), breadth.begin());
  std::vector<std::size_t> times(n);
  std::iota(times.begin(), times.end(), 0);
  std::stable_sort(times.begin(), times.end(), [&](std::size_t a, std::size_t b) { return breadth[a] > breadth[b]; });
  std::vector<std::size_t> order;
  std::vector<bool> ordered(n, false);
  for (std::size_t t : times) {
    // `sized` is largest first, so its blocks alive at t come in the order wanted.
    for (std::size_t i : sized) {
      if (!ordered[i] && i <= t && t < blocks[i].freed_before) {
        ordered[i] = true;
        order.push_back(i);
      }
    }
    if (order.size() == sized.size()) break;
  }
  return order;
}

// Each block in `order` at the lowest offset not overlapping a block placed before it and alive
// at the same time.
ArenaPlan place(const std::vector<RecordedBlock>& blocks, const std::vector<std::size_t>& order) {
  ArenaPlan plan;
  plan.offsets.assign(blocks.size(), kOnHeap);
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

}  // namespace

ArenaPlan plan_arena(const std::vector<RecordedBlock>& blocks) {
  // Neither order wins everywhere (on random lifetimes each is the smaller about a tenth of the
  // time), and placing is cheap next to a step: both, and the smaller plan.
  const std::vector<std::size_t> sized = by_size(blocks);
  ArenaPlan largest_first = place(blocks, sized);
  ArenaPlan breadth_first = place(blocks, by_breadth(blocks, sized));
  return breadth_first.arena_bytes < largest_first.arena_bytes ? breadth_first : largest_first;
}

}  // namespace tapegrad::detail
