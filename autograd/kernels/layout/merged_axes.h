#pragma once
// The first step of every strided walk that moves elements from one array to another (the shape
// ops' copy kernel, einsum's permutation passes): drop size-1 axes and merge each axis into its
// outer neighbour when both arrays step over the pair contiguously. A plain copy becomes one long
// axis, a permute keeps only the axes it really reorders, and a tiled transpose sees its two axes.
#include <cstddef>
#include <vector>

namespace tapegrad::kernels {

// One axis of a walk: its size and its strides (in elements) in the source and the destination.
template <class Stride>
struct WalkAxis {
  std::size_t size;
  Stride src, dst;
};

// shape, src and dst are indexable by axis; Stride is std::ptrdiff_t (strides may be 0 or stepped
// back) or std::size_t.
template <class Stride, class Sizes, class SrcStrides, class DstStrides>
std::vector<WalkAxis<Stride>> merged_axes(const Sizes& shape, const SrcStrides& src, const DstStrides& dst) {
  std::vector<WalkAxis<Stride>> axes;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const WalkAxis<Stride> axis{shape[d], static_cast<Stride>(src[d]), static_cast<Stride>(dst[d])};
    const auto size = static_cast<Stride>(axis.size);
    if (!axes.empty() && axes.back().src == axis.src * size && axes.back().dst == axis.dst * size) {
      axes.back() = {axes.back().size * axis.size, axis.src, axis.dst};
    } else {
      axes.push_back(axis);
    }
  }
  return axes;
}

}  // namespace tapegrad::kernels
