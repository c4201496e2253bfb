#include "autograd/kernels/layout/strided_pass.h"

#include <algorithm>
#include <array>
#include <optional>

#include <tbb/parallel_for.h>

#include "autograd/kernels/layout/merged_axes.h"
#include "autograd/base/spread.h"

namespace tapegrad::kernels {

namespace {

// 26 + 26 letters: no operand or output has more distinct axes than that.
constexpr std::size_t kMaxLetters = 52;
// A strided pass with fewer multiply-adds than this runs on the calling thread.
constexpr std::size_t kParallelWork = 1u << 15;
// Work per task of a parallel pass; fixed, though results would not depend on it anyway (each
// output element is summed by one thread in one order).
constexpr std::size_t kChunkWork = 1u << 13;

// sum over the inner index of base[i . inner_src], in row-major order of the inner index.
template <class T>
T sum_inner(const StridedPass& p, const T* base) {
  const std::size_t nd = p.inner.size();
  if (nd == 0) return *base;
  const std::size_t last_size = p.inner[nd - 1], last_stride = p.inner_src[nd - 1];
  std::array<std::size_t, kMaxLetters> index{};
  std::size_t offset = 0;
  T acc = T(0);
  for (;;) {
    for (std::size_t i = 0; i < last_size; ++i) acc += base[offset + i * last_stride];
    std::size_t d = nd - 1;
    for (;;) {
      if (d == 0) return acc;
      --d;
      offset += p.inner_src[d];
      if (++index[d] < p.inner[d]) break;
      offset -= p.inner_src[d] * index[d];
      index[d] = 0;
    }
  }
}

// Outer elements [begin, end) of the pass (row-major order of the outer index).
template <class T>
void run_pass_range(const StridedPass& p, const T* src, T* dst, std::size_t begin, std::size_t end) {
  const std::size_t nd = p.outer.size();
  if (nd == 0) {
    if (begin < end) dst[0] = sum_inner(p, src);
    return;
  }
  std::array<std::size_t, kMaxLetters> index{};
  std::size_t s = 0, d = 0;
  for (std::size_t ax = nd, rest = begin; ax-- > 0;) {
    index[ax] = rest % p.outer[ax];
    rest /= p.outer[ax];
    s += index[ax] * p.outer_src[ax];
    d += index[ax] * p.outer_dst[ax];
  }
  const std::size_t last = nd - 1, last_src = p.outer_src[last], last_dst = p.outer_dst[last];
  for (std::size_t e = begin; e < end;) {
    // A run along the last outer axis, then a carry into the axes before it.
    const std::size_t run = std::min(p.outer[last] - index[last], end - e);
    if (!p.inner.empty()) {
      for (std::size_t i = 0; i < run; ++i) dst[d + i * last_dst] = sum_inner(p, src + s + i * last_src);
    } else if (last_src == 1 && last_dst == 1) {
      std::copy_n(src + s, run, dst + d);
    } else {  // a permutation or broadcast: nothing to sum
      for (std::size_t i = 0; i < run; ++i) dst[d + i * last_dst] = src[s + i * last_src];
    }
    e += run;
    index[last] += run;
    s += run * last_src;
    d += run * last_dst;
    for (std::size_t ax = last; ax > 0 && index[ax] == p.outer[ax]; --ax) {
      s += p.outer_src[ax - 1] - index[ax] * p.outer_src[ax];
      d += p.outer_dst[ax - 1] - index[ax] * p.outer_dst[ax];
      index[ax] = 0;
      ++index[ax - 1];
    }
  }
}

// Side of the square tiles of a tiled permutation: 16 floats fill one cache line.
constexpr std::size_t kTile = 16;

using PermutedAxis = WalkAxis<std::size_t>;

// A pass that only moves elements (no sum, no diagonal), its axes merged (kernels/layout/merged_axes.h).
std::vector<PermutedAxis> merged_permutation(const StridedPass& p) {
  return merged_axes<std::size_t>(p.outer, p.outer_src, p.outer_dst);
}

// A permutation whose destination is contiguous along one axis and whose source is contiguous
// along another (the GEMM result [bh, i, j] written as [i, j, bh], say): walking it in
// destination order reads the source with a large stride, one cache line per element. Copied
// instead in kTile x kTile tiles of those two axes, every line read or written is used whole.
//
// Those two axes, rows (contiguous in the source) and cols (contiguous in the destination, its
// innermost axis), each at least kTile long; and the rest, walked one strip of rows at a time.
struct TiledAxes {
  PermutedAxis rows, cols;
  std::vector<PermutedAxis> rest;
};

std::optional<TiledAxes> tiled_axes(const StridedPass& p) {
  if (!p.inner.empty() || p.zero_fill) return std::nullopt;
  const std::vector<PermutedAxis> axes = merged_permutation(p);
  if (axes.size() < 2 || axes.back().dst != 1 || axes.back().src == 1) return std::nullopt;
  const auto by_src = std::find_if(axes.begin(), axes.end(), [](const PermutedAxis& a) { return a.src == 1; });
  if (by_src == axes.end() || by_src->size < kTile || axes.back().size < kTile) return std::nullopt;
  TiledAxes tiled{*by_src, axes.back(), std::vector<PermutedAxis>(axes.begin(), axes.end() - 1)};
  tiled.rest.erase(tiled.rest.begin() + (by_src - axes.begin()));
  return tiled;
}

// dst[r * dst_stride + c] = src[c * src_stride + r] for r < rows, c < cols (both at most kTile),
// through a local tile, so that both the reads and the writes run along cache lines: reading
// column by column straight into the destination would touch kTile source lines a power-of-two
// stride apart, which share one L1 set and evict each other.
template <class T>
inline void transpose_tile(const T* src, std::size_t src_stride, T* dst, std::size_t dst_stride, std::size_t rows,
                           std::size_t cols) {
  T tile[kTile][kTile];
  for (std::size_t c = 0; c < cols; ++c)
    for (std::size_t r = 0; r < rows; ++r) tile[r][c] = src[c * src_stride + r];
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) dst[r * dst_stride + c] = tile[r][c];
}

// Runs the pass when tiled_axes finds its tiles; returns false (and does nothing) otherwise.
template <class T>
bool run_tiled_permutation(const StridedPass& p, const T* src, T* dst, bool parallel) {
  const std::optional<TiledAxes> tiled = tiled_axes(p);
  if (!tiled) return false;
  const PermutedAxis& rows = tiled->rows;
  const PermutedAxis& cols = tiled->cols;
  const std::vector<PermutedAxis>& rest = tiled->rest;
  std::size_t rest_count = 1;
  for (const auto& a : rest) rest_count *= a.size;
  const std::size_t row_blocks = (rows.size + kTile - 1) / kTile;
  // A task per strip of kTile rows; below kParallelWork elements in all, one thread does them.
  const auto strip = [&](std::size_t task) {
    std::size_t s = 0, d = 0;
    for (std::size_t ax = rest.size(), r = task / row_blocks; ax-- > 0;) {
      const std::size_t i = r % rest[ax].size;
      r /= rest[ax].size;
      s += i * rest[ax].src;
      d += i * rest[ax].dst;
    }
    const std::size_t row_begin = task % row_blocks * kTile, row_count = std::min(kTile, rows.size - row_begin);
    for (std::size_t col_begin = 0; col_begin < cols.size; col_begin += kTile) {
      const std::size_t col_count = std::min(kTile, cols.size - col_begin);
      const T* from = src + s + row_begin + col_begin * cols.src;
      T* to = dst + d + row_begin * rows.dst + col_begin;
      if (row_count == kTile && col_count == kTile) {
        transpose_tile(from, cols.src, to, rows.dst, kTile, kTile);  // constant bounds: unrolled
      } else {
        transpose_tile(from, cols.src, to, rows.dst, row_count, col_count);
      }
    }
  };
  const std::size_t strips = rest_count * row_blocks;
  if (!parallel || rest_count * rows.size * cols.size < kParallelWork) {
    for (std::size_t task = 0; task < strips; ++task) strip(task);
  } else {
    static SpreadRule rule;
    spread_indices(rule, rest_count * rows.size * cols.size, strips, strip);
  }
  return true;
}

}  // namespace

bool runs_tiled(const StridedPass& p) { return tiled_axes(p).has_value(); }

StridedPass restricted(const StridedPass& p, std::size_t axis, std::size_t count) {
  StridedPass part = p;
  part.dst_size = p.dst_size / p.outer[axis] * count;
  part.outer[axis] = count;
  return part;
}

template <class T>
void run_pass(const StridedPass& p, const T* src, T* dst, bool parallel) {
  if (run_tiled_permutation(p, src, dst, parallel)) return;
  if (p.zero_fill) std::fill_n(dst, p.dst_size, T(0));
  const std::size_t count = shape_product(p.outer), per_element = std::max<std::size_t>(shape_product(p.inner), 1);
  if (!parallel || count * per_element < kParallelWork) {
    run_pass_range(p, src, dst, 0, count);
    return;
  }
  const std::size_t chunk = std::max<std::size_t>(kChunkWork / per_element, 1);
  static SpreadRule rule;
  spread_indices(rule, count * per_element, (count + chunk - 1) / chunk, [&](std::size_t c) {
    run_pass_range(p, src, dst, c * chunk, std::min(count, (c + 1) * chunk));
  });
}

template void run_pass<float>(const StridedPass&, const float*, float*, bool);
template void run_pass<double>(const StridedPass&, const double*, double*, bool);

}  // namespace tapegrad::kernels
