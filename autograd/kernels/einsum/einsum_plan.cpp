#include "autograd/kernels/einsum/einsum_plan.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <unordered_map>

#include <tbb/parallel_for.h>

#include "autograd/kernels/gemm/blas.h"
#include "autograd/kernels/layout/strided_pass.h"
#include "autograd/base/spread.h"
#include "autograd/base/matmul_precision.h"
#include "autograd/base/checks.h"

namespace tapegrad::kernels {

namespace {

// A training loop sees a handful of (equation, shapes) pairs; a program that sees thousands
// (varying sequence lengths) starts over rather than growing without bound.
constexpr std::size_t kMaxCachedPlans = 1024;


std::string quoted(std::string_view subscripts) { return "einsum(\"" + std::string(subscripts) + "\")"; }

// The letters of s, each once, in order of first appearance.
std::string unique_letters(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!has_letter(out, c)) out.push_back(c);
  return out;
}

// The letters of `from` (each once, in its order) that satisfy keep(c).
template <class Keep>
std::string select(const std::string& from, Keep keep) {
  std::string out;
  for (char c : unique_letters(from))
    if (keep(c)) out.push_back(c);
  return out;
}

Shape sizes_of(const std::string& letters, const EinsumSizes& sizes) {
  Shape shape;
  for (char c : letters) shape.push_back(sizes.at(c));
  return shape;
}

// Element stride of each letter in a row-major contiguous array with these letters as axes. A
// repeated letter gets the sum of its axes' strides: stepping it walks the diagonal.
std::map<char, std::size_t> letter_strides(const std::string& letters, const Shape& shape) {
  std::map<char, std::size_t> strides;
  std::size_t stride = 1;
  for (std::size_t d = letters.size(); d-- > 0;) {
    strides[letters[d]] += stride;
    stride *= shape[d];
  }
  return strides;
}

// How a GEMM operand is read: matrix i of the batch starts at i * batch_stride; element (r, c)
// of op(X) is at r * ld + c, or at c * ld + r when trans.
struct MatrixLayout {
  bool trans = false;
  std::size_t batch_stride = 0, ld = 1;
};

// One GEMM operand: read in place, or first made contiguous by `prep`.
struct GemmOperand {
  std::optional<StridedPass> prep;
  MatrixLayout layout;
};

struct EinsumPlan {
  std::string op;            // einsum("<equation>"), for the size checks' messages
  Shape out_shape;
  bool empty = false;        // some letter has size 0: the output is all zeros (or has no elements)
  StridedPass single;        // one operand: the whole einsum is this pass
  bool swap = false;         // two operands: the GEMM's left operand is operands[1]
  GemmOperand left, right;   // [batch, M, K] and [batch, K, N]
  std::size_t batch = 1, m = 1, n = 1, k = 1;
  MatrixLayout result;       // where the GEMM writes [batch, M, N]: into the output, or for `finish`
  std::optional<StridedPass> finish;  // GEMM result -> output; absent: the GEMM writes the output
  std::size_t copied = 0;    // elements written by prep and finish passes, to pick the cheapest plan
  // The batch's first letter: the GEMM's batch index is (its index) x (the other batch letters),
  // and prep passes have it as their outer axis 0, so a range of it is a range of products
  // (run_plan splits large products along it). Size 1: no batch letter.
  std::size_t first_batch_size = 1;
  std::size_t finish_axis = 0;  // that letter's axis in finish->outer
};

// A group of letters read as one axis: its total size and the stride of its innermost letter.
// Letters of size 1 are skipped (any stride reads them). nullopt when the letters are not laid
// out one inside the other in this order.
struct Axis {
  std::size_t size = 1, stride = 0;
};

std::optional<Axis> merge_axis(const std::string& letters, const EinsumSizes& sizes,
                               const std::map<char, std::size_t>& strides) {
  Axis axis;
  for (char c : letters) {
    const std::size_t size = sizes.at(c), stride = strides.at(c);
    if (size == 1) continue;
    if (axis.size > 1 && axis.stride != stride * size) return std::nullopt;
    axis = {axis.size * size, stride};
  }
  return axis;
}

// The operand as [batch, rows, cols] matrices in place: needs rows or columns contiguous, and
// the other stride no smaller than the contiguous extent (BLAS's rule for ld).
std::optional<MatrixLayout> in_place(const Axis& batch, const Axis& rows, const Axis& cols) {
  if (cols.size == 1 || cols.stride == 1) {
    const std::size_t ld = rows.size == 1 ? cols.size : rows.stride;
    if (ld >= cols.size) return MatrixLayout{false, batch.stride, ld};
  }
  if (rows.size == 1 || rows.stride == 1) {
    const std::size_t ld = cols.size == 1 ? rows.size : cols.stride;
    if (ld >= rows.size) return MatrixLayout{true, batch.stride, ld};
  }
  return std::nullopt;
}

// The pass that writes `src` (letters `src_letters`, row-major `src_shape`) as a contiguous array
// over `out_letters`: a letter repeated in the source reads its diagonal, a repeated output letter
// writes the diagonal (zeros elsewhere), an output letter missing from the source is broadcast
// (source stride 0), and source letters missing from the output are summed away.
StridedPass strided_pass(const std::string& src_letters, const Shape& src_shape, const std::string& out_letters,
                         const EinsumSizes& sizes) {
  const auto src = letter_strides(src_letters, src_shape);
  const Shape out_shape = sizes_of(out_letters, sizes);
  const auto dst = letter_strides(out_letters, out_shape);
  StridedPass pass;
  for (char c : unique_letters(out_letters)) {
    pass.outer.push_back(sizes.at(c));
    pass.outer_src.push_back(src.count(c) ? src.at(c) : 0);
    pass.outer_dst.push_back(dst.at(c));
  }
  for (char c : select(src_letters, [&](char c) { return !has_letter(out_letters, c); })) {
    pass.inner.push_back(sizes.at(c));
    pass.inner_src.push_back(src.at(c));
  }
  pass.zero_fill = unique_letters(out_letters).size() != out_letters.size();
  pass.dst_size = shape_product(out_shape);
  return pass;
}

// A contiguous array with letters `own` (row-major `shape`) read as [batch, rows, cols] matrices
// in place, when it holds those letters, each once, laid out so that BLAS can. Batch letters it
// lacks get stride 0: one matrix serves that whole part of the batch.
std::optional<MatrixLayout> as_matrices(const std::string& own, const Shape& shape, const std::string& batch,
                                        const std::string& rows, const std::string& cols, const EinsumSizes& sizes) {
  const auto own_batch =
      static_cast<std::size_t>(std::count_if(batch.begin(), batch.end(), [&](char c) { return has_letter(own, c); }));
  if (own.size() != own_batch + rows.size() + cols.size()) return std::nullopt;
  auto strides = letter_strides(own, shape);
  for (char c : batch) strides.emplace(c, 0);
  const auto b = merge_axis(batch, sizes, strides), r = merge_axis(rows, sizes, strides),
             c = merge_axis(cols, sizes, strides);
  if (!b || !r || !c) return std::nullopt;
  return in_place(*b, *r, *c);
}

// Contiguous [batch, rows, cols] matrices.
MatrixLayout packed(const std::string& rows, const std::string& cols, const EinsumSizes& sizes) {
  const std::size_t rows_size = shape_product(sizes_of(rows, sizes)), cols_size = shape_product(sizes_of(cols, sizes));
  return {false, rows_size * cols_size, cols_size};
}

// One GEMM operand with letters `own` (batch, rows and cols are drawn from them): read in place
// when it has no repeated letter, no letter to sum away, and its strides already describe
// [batch, rows, cols] matrices; otherwise gathered into that layout.
GemmOperand gemm_operand(const std::string& own, const Shape& shape, const std::string& batch, const std::string& rows,
                         const std::string& cols, const EinsumSizes& sizes) {
  if (auto layout = as_matrices(own, shape, batch, rows, cols, sizes)) return {std::nullopt, *layout};
  return {strided_pass(own, shape, batch + rows + cols, sizes), packed(rows, cols, sizes)};
}

// The output's leading letters that can join the batch although only one operand has them: a
// prefix of the output made of shared letters and free letters of a single operand. With them
// in the batch, "ijk,hkl->hijl" is h products x[ij,k] W_h[k,l] written straight into the output,
// x shared by all of them (batch stride 0), instead of one product between two permuting copies.
std::string broadcast_batch_letters(const std::string& l, const std::string& r, const std::string& out) {
  std::string letters;
  int side = 0;  // 0: none yet, 1: free letters of l, 2: free letters of r
  for (char c : out) {
    const bool in_l = has_letter(l, c), in_r = has_letter(r, c);
    if (in_l != in_r) {
      const int own_side = in_l ? 1 : 2;
      if (side != 0 && side != own_side) break;
      side = own_side;
    }
    letters.push_back(c);
  }
  return side == 0 ? std::string() : letters;
}

// The two-operand plan with operands[swap] on the left and the contracted letters in the order of
// the left (or right) operand. Batch, M and N letters follow the output's order, so that an
// output laid out as [batch, M, N] needs no final pass. With `broadcast_batch`, the output's
// leading free letters join the batch too (broadcast_batch_letters).
EinsumPlan plan_pair(const EinsumEquation& eq, const std::vector<Shape>& shapes, const EinsumSizes& sizes, bool swap,
                     bool k_order_from_right, bool broadcast_batch) {
  const std::string& l = eq.operands[swap ? 1 : 0];
  const std::string& r = eq.operands[swap ? 0 : 1];
  const Shape& l_shape = shapes[swap ? 1 : 0];
  const Shape& r_shape = shapes[swap ? 0 : 1];
  const std::string& out = eq.output;
  const std::string extra = broadcast_batch ? broadcast_batch_letters(l, r, out) : std::string();
  const auto in_batch = [&](char c) { return (has_letter(l, c) && has_letter(r, c)) || has_letter(extra, c); };
  const std::string batch = select(out, in_batch);
  const std::string m = select(out, [&](char c) { return has_letter(l, c) && !in_batch(c); });
  const std::string n = select(out, [&](char c) { return has_letter(r, c) && !in_batch(c); });
  const std::string k = select(k_order_from_right ? r : l, [&](char c) {
    return has_letter(l, c) && has_letter(r, c) && !has_letter(out, c);
  });
  EinsumPlan plan;
  plan.swap = swap;
  plan.left = gemm_operand(l, l_shape, batch, m, k, sizes);
  plan.right = gemm_operand(r, r_shape, batch, k, n, sizes);
  plan.batch = shape_product(sizes_of(batch, sizes));
  plan.m = shape_product(sizes_of(m, sizes));
  plan.n = shape_product(sizes_of(n, sizes));
  plan.k = shape_product(sizes_of(k, sizes));
  // The GEMM writes the output directly when the output's strides describe [batch, M, N]
  // matrices (BLAS writes C untransposed); otherwise a final pass permutes, broadcasts or
  // writes a diagonal.
  const auto direct = as_matrices(out, sizes_of(out, sizes), batch, m, n, sizes);
  if (direct && !direct->trans) {
    plan.result = *direct;
  } else {
    const std::string gemm_letters = batch + m + n;
    plan.result = packed(m, n, sizes);
    plan.finish = strided_pass(gemm_letters, sizes_of(gemm_letters, sizes), out, sizes);
  }
  if (!batch.empty()) {
    plan.first_batch_size = sizes.at(batch[0]);
    plan.finish_axis = unique_letters(out).find(batch[0]);
  }
  for (const auto* pass : {plan.left.prep ? &*plan.left.prep : nullptr, plan.right.prep ? &*plan.right.prep : nullptr,
                           plan.finish ? &*plan.finish : nullptr})
    if (pass) plan.copied += pass->dst_size;
  return plan;
}

EinsumPlan make_plan(const EinsumEquation& eq, const std::vector<Shape>& shapes, const EinsumSizes& sizes) {
  EinsumPlan plan;
  plan.op = quoted(eq.str());
  plan.out_shape = sizes_of(eq.output, sizes);
  // Before `empty`: an output [2^32,2^32] of a sum over a size-0 letter must not wrap to 0 elements.
  checked_numel(plan.out_shape, plan.op, "the output");
  plan.empty = std::any_of(sizes.begin(), sizes.end(), [](const auto& letter) { return letter.second == 0; });
  if (plan.empty) return plan;
  if (eq.operands.size() == 1) {
    plan.single = strided_pass(eq.operands[0], shapes[0], eq.output, sizes);
    return plan;
  }
  // Eight candidates; the one that copies least wins (ties: the first, so a broadcast batch of
  // many small products is taken only when it saves copying).
  std::optional<EinsumPlan> best;
  for (bool broadcast_batch : {false, true}) {
    for (bool swap : {false, true}) {
      for (bool k_right : {false, true}) {
        EinsumPlan candidate = plan_pair(eq, shapes, sizes, swap, k_right, broadcast_batch);
        if (!best || candidate.copied < best->copied) best = std::move(candidate);
      }
    }
  }
  best->op = plan.op;
  best->out_shape = plan.out_shape;
  return *best;
}

template <class T>
using Buffer = std::unique_ptr<T[]>;

// A workspace of `size` elements (a gathered operand, or the GEMM result before the final pass),
// checked against memory like every other array an op makes.
template <class T>
Buffer<T> workspace(const EinsumPlan& plan, std::size_t size) {
  allocatable(Shape{size}, sizeof(T), plan.op, "a workspace");
  return std::make_unique_for_overwrite<T[]>(size);
}

// The GEMM's operands, products and final pass for indices [first, first + count) of the batch's
// first letter (all of them, or a chunk: run_plan), the passes in TBB tasks only when `parallel`.
template <class T>
void run_product_range(const EinsumPlan& plan, const T* x_left, const T* x_right, T* out, std::size_t first,
                       std::size_t count, bool parallel) {
  const bool whole = count == plan.first_batch_size;
  const std::size_t products_per_index = plan.batch / plan.first_batch_size;
  // An operand in place, or gathered (its prep pass has the batch's first letter as axis 0).
  const auto input = [&](const GemmOperand& op, const T* x, Buffer<T>& buffer) -> const T* {
    if (!op.prep) return x + first * products_per_index * op.layout.batch_stride;
    buffer = workspace<T>(plan, whole ? op.prep->dst_size : op.prep->dst_size / plan.first_batch_size * count);
    if (whole) {
      run_pass(*op.prep, x, buffer.get(), parallel);
    } else {
      run_pass(restricted(*op.prep, 0, count), x + first * op.prep->outer_src[0], buffer.get(), parallel);
    }
    return buffer.get();
  };
  Buffer<T> left_buffer, right_buffer, product_buffer;
  const T* a = input(plan.left, x_left, left_buffer);
  const T* b = input(plan.right, x_right, right_buffer);
  const std::size_t products = count * products_per_index;
  T* c = out + first * products_per_index * plan.result.batch_stride;
  if (plan.finish) {
    product_buffer = workspace<T>(plan, products * plan.m * plan.n);
    c = product_buffer.get();
  }
  const MatrixLayout& la = plan.left.layout;
  const MatrixLayout& lb = plan.right.layout;
  gemm_batched(products, la.trans, lb.trans, plan.m, plan.n, plan.k, T(1), a, la.batch_stride, la.ld, b,
               lb.batch_stride, lb.ld, T(0), c, plan.result.batch_stride, plan.result.ld);
  if (!plan.finish) return;
  if (whole) {
    run_pass(*plan.finish, c, out, parallel);
  } else {
    const std::size_t axis = plan.finish_axis;
    run_pass(restricted(*plan.finish, axis, count), c, out + first * plan.finish->outer_dst[axis], parallel);
  }
}

// Bytes of gathered operands and GEMM result a chunk of run_plan holds: about a core's L2 (512 KiB
// on Zen 3, 1-2 MiB on later cores), so that each pass reads what the step before it wrote from
// cache rather than memory. Measured on the labml seq-128 einsums on Zen 3 (bench/RESULTS.md):
// 1 MiB was fastest or tied on every row, 2 and 4 MiB slower; smaller targets ran the same chunks,
// since keeps_tiles_of holds those einsums to two batch indices a chunk.
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

// Whether pass p restricted to `count` indices of outer axis `axis` still runs tiled, if the
// whole pass does: a chunk whose destination runs are shorter than a tile is copied element by
// element, slower than the whole pass from memory.
bool keeps_tiles_of(const std::optional<StridedPass>& p, std::size_t axis, std::size_t count) {
  return !p || !runs_tiled(*p) || runs_tiled(restricted(*p, axis, count));
}

// How many chunks of the batch's first letter run_plan splits a product of `element_size`-byte
// elements into: 1 when it copies little, has no batch letter to split along, or writes a
// diagonal (its zero fill spans the whole output).
std::size_t chunk_count(const EinsumPlan& plan, std::size_t element_size) {
  const std::size_t indices = plan.first_batch_size, copied_bytes = plan.copied * element_size;
  if (indices < 2 || copied_bytes < 2 * kChunkBytes || (plan.finish && plan.finish->zero_fill)) return 1;
  // A chunk of a single product would take gemm_batched's one-product path, which may pick another
  // backend than the batched call: chunks keep at least two products, so results do not change.
  const std::size_t min_indices = plan.batch / indices >= 2 ? 1 : 2;
  std::size_t chunks = std::clamp<std::size_t>(copied_bytes / kChunkBytes, 1, indices / min_indices);
  const auto keeps_all_tiles = [&](std::size_t count) {
    return keeps_tiles_of(plan.left.prep, 0, count) && keeps_tiles_of(plan.right.prep, 0, count) &&
           keeps_tiles_of(plan.finish, plan.finish_axis, count);
  };
  // Even splits: the smallest chunk has indices / chunks indices.
  while (chunks > 1 && !keeps_all_tiles(indices / chunks)) --chunks;
  return chunks;
}

template <class T>
xt::xarray<T> run_plan(const EinsumPlan& plan, const std::vector<const xt::xarray<T>*>& operands) {
  auto out = xt::xarray<T>::from_shape(allocatable(plan.out_shape, sizeof(T), plan.op, "the output"));
  if (plan.empty) {
    std::fill(out.begin(), out.end(), T(0));
    return out;
  }
  if (operands.size() == 1) {
    run_pass(plan.single, operands[0]->data(), out.data());
    return out;
  }
  const T* x_left = operands[plan.swap ? 1 : 0]->data();
  const T* x_right = operands[plan.swap ? 0 : 1]->data();
  const std::size_t chunks = chunk_count(plan, sizeof(T)), indices = plan.first_batch_size;
  if (chunks == 1) {
    run_product_range(plan, x_left, x_right, out.data(), 0, indices, true);
    return out;
  }
  // Chunks in TBB tasks (or one after another, as the SpreadRule decides), each on one thread from
  // its gathers to its final pass: what one step of a chunk writes, the next reads from that core's
  // cache. Even splits: every chunk holds at least chunk_count's minimum. The matmul mode is per thread (base/matmul_precision.h): a chunk run by a
  // TBB worker takes the calling thread's.
  const MatmulPrecision precision = matmul_precision();
  static SpreadRule rule;
  spread_indices(rule, plan.copied, chunks, [&](std::size_t chunk) {
    const MatmulPrecisionGuard mode(precision);
    const std::size_t first = chunk * indices / chunks, last = (chunk + 1) * indices / chunks;
    run_product_range(plan, x_left, x_right, out.data(), first, last - first, false);
  });
  return out;
}

using PlanCache = std::unordered_map<std::string, std::shared_ptr<const EinsumPlan>>;

PlanCache& plan_cache() {
  thread_local PlanCache cache;
  return cache;
}

// The plan for (equation, shapes, sizes of output-only letters), made and validated on first use.
std::shared_ptr<const EinsumPlan> find_plan(const EinsumEquation& eq, const std::vector<Shape>& shapes,
                                            const EinsumSizes& output_only) {
  std::string key = eq.str();
  for (const Shape& s : shapes) key += format_shape(s);
  for (char c : eq.output) {
    const bool in_operand = std::any_of(eq.operands.begin(), eq.operands.end(),
                                        [c](const std::string& s) { return has_letter(s, c); });
    const auto it = output_only.find(c);
    if (!in_operand) key += std::string(1, c) + (it == output_only.end() ? "?" : std::to_string(it->second));
  }
  PlanCache& cache = plan_cache();
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  const EinsumSizes sizes = einsum_sizes(eq.str(), eq, shapes, output_only);
  auto plan = std::make_shared<const EinsumPlan>(make_plan(eq, shapes, sizes));
  if (cache.size() >= kMaxCachedPlans) cache.clear();
  cache.emplace(std::move(key), plan);
  return plan;
}

}  // namespace

std::string EinsumEquation::str() const {
  std::string s;
  for (std::size_t i = 0; i < operands.size(); ++i) s += (i ? "," : "") + operands[i];
  return s + "->" + output;
}

EinsumSizes einsum_sizes(std::string_view subscripts, const EinsumEquation& eq, const std::vector<Shape>& shapes,
                         const EinsumSizes& output_only) {
  const std::string where = quoted(subscripts);
  if (shapes.size() != eq.operands.size()) {
    throw ValueError(where + ": the subscripts describe " + std::to_string(eq.operands.size()) + " operand(s) but " +
                     std::to_string(shapes.size()) + " were given");
  }
  EinsumSizes sizes;
  std::map<char, std::size_t> sized_by;  // the operand each letter's size was first read from
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const std::string& letters = eq.operands[k];
    const Shape& shape = shapes[k];
    if (shape.size() != letters.size()) {
      throw ShapeError(where + ": operand " + std::to_string(k) + " has " + std::to_string(shape.size()) + " dims " +
                       format_shape(shape) + " but its subscripts \"" + letters + "\" need " +
                       std::to_string(letters.size()));
    }
    for (std::size_t d = 0; d < letters.size(); ++d) {
      const char c = letters[d];
      const auto [it, first] = sizes.emplace(c, shape[d]);
      if (first) {
        sized_by[c] = k;
      } else if (it->second != shape[d]) {
        const std::size_t j = sized_by[c];
        throw ShapeError(where + ": index '" + std::string(1, c) + "' has size " + std::to_string(it->second) +
                         " in operand " + std::to_string(j) + " " + format_shape(shapes[j]) + " but size " +
                         std::to_string(shape[d]) + " in operand " + std::to_string(k) + " " + format_shape(shape));
      }
    }
  }
  for (char c : eq.output) {
    if (sizes.count(c)) continue;
    const auto it = output_only.find(c);
    if (it == output_only.end()) {
      throw ValueError(where + ": output index '" + std::string(1, c) +
                       "' appears in no operand, so its size is unknown");
    }
    sizes[c] = it->second;
  }
  return sizes;
}

template <class T>
xt::xarray<T> einsum(const EinsumEquation& eq, const std::vector<const xt::xarray<T>*>& operands,
                     const EinsumSizes& output_only) {
  if (operands.empty() || operands.size() > 2 || operands.size() != eq.operands.size()) {
    throw ValueError(quoted(eq.str()) + ": the einsum kernel takes 1 or 2 operands matching the subscripts, got " +
                     std::to_string(operands.size()));
  }
  std::vector<Shape> shapes;
  for (const auto* x : operands) shapes.emplace_back(x->shape().begin(), x->shape().end());
  return run_plan(*find_plan(eq, shapes, output_only), operands);
}

std::size_t einsum_cached_plans() { return plan_cache().size(); }

std::size_t einsum_chunks(const EinsumEquation& eq, const std::vector<Shape>& shapes, std::size_t element_size) {
  return chunk_count(*find_plan(eq, shapes, {}), element_size);
}

template xt::xarray<float> einsum<float>(const EinsumEquation&, const std::vector<const xt::xarray<float>*>&,
                                         const EinsumSizes&);
template xt::xarray<double> einsum<double>(const EinsumEquation&, const std::vector<const xt::xarray<double>*>&,
                                           const EinsumSizes&);

}  // namespace tapegrad::kernels
