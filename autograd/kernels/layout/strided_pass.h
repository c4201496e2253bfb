#pragma once
// The one loop nest behind einsum's data movement (kernels/einsum/einsum_plan.cpp): an operand gathered
// into the layout a GEMM reads, the GEMM's result written in the output's layout, or a
// one-operand einsum. Permutations run in tiles, so that every cache line read or written is used
// whole.
#include <cstddef>
#include <vector>

#include "autograd/base/errors.h"

namespace tapegrad::kernels {

// dst[o . outer_dst] = sum over i of src[o . outer_src + i . inner_src], for every index o of
// `outer` and i of `inner`. Distinct outer indices reach distinct dst elements; when some dst
// elements are reached by none (off a diagonal), zero_fill clears dst first. This one loop nest
// is a permute, a diagonal, a sum over axes, a broadcast, or several of them at once.
struct StridedPass {
  Shape outer;
  std::vector<std::size_t> outer_src, outer_dst;
  Shape inner;
  std::vector<std::size_t> inner_src;
  bool zero_fill = false;
  std::size_t dst_size = 0;
};

// Whether run_pass moves p's elements in square tiles (a permutation whose source and
// destination are contiguous along two different axes, both at least a tile long).
bool runs_tiled(const StridedPass& p);

// Pass p over indices [0, count) of its outer axis `axis` only (the caller offsets src and dst to
// the range's first index). Only for passes without zero_fill, which would clear all of dst.
StridedPass restricted(const StridedPass& p, std::size_t axis, std::size_t count);

// Runs the pass: in TBB tasks when it is large and `parallel`, else on the calling thread. Each
// destination element is written by one thread in a fixed order, whatever the number of threads.
template <class T>
void run_pass(const StridedPass& p, const T* src, T* dst, bool parallel = true);

}  // namespace tapegrad::kernels
