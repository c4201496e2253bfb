#pragma once
// einsum on raw arrays: parsing, validation, and a planned evaluation over one or two operands.
// Knows nothing of tapes; ops/linalg.cpp builds the differentiable einsum on top of it.
//
// Semantics: out[output letters] = sum over every other letter of prod_k operand_k[its letters].
// Beyond the user-facing einsum, the evaluator accepts two things the backward needs, so that the
// gradient of an einsum is an einsum again (dA = einsum(out, B -> A), sizes taken from A):
//   - an output letter that appears in no operand, with its size given: the result is broadcast
//     along it ("i->ij" with j = 3 copies each element three times);
//   - a letter repeated in the output: the result is written onto that diagonal, zeros elsewhere
//     ("i->ii" builds a diagonal matrix).
//
// A plan is made once per (equation, shapes) and cached per thread:
//   1. an operand with a repeated letter is reduced to its diagonal, and letters found only in
//      that operand (not in the other, not in the output) are summed away;
//   2. the remaining letters are classified as batch (both operands and the output), contracted
//      (both operands, not the output), left-free and right-free; the operands are brought to
//      [batch, M, K] and [batch, K, N] (an explicit strided copy, skipped when the operand's own
//      strides already describe such matrices, transposed or not);
//   3. one kernels::gemm_batched call, writing into the output when the output's strides
//      describe [batch, M, N] matrices;
//   4. otherwise one strided pass from the GEMM result to the output (a permutation, a broadcast
//      along an output-only letter, a diagonal).
// Steps 1 and 2 for one operand are a single strided pass (kernels/layout/strided_pass.h); a one-operand
// einsum is one pass. When those passes copy more than a core's cache holds, steps 2 to 4 run in
// chunks of the batch, each from its gathers to its final pass on one thread, so that every pass
// reads what the step before wrote from cache.
// Every output element is produced by one thread in a fixed order: results do not depend on the
// number of threads.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

#include "autograd/base/errors.h"

namespace tapegrad::kernels {

// Whether `letters` (an operand's or the output's subscripts) holds the letter c.
inline bool has_letter(const std::string& letters, char c) { return letters.find(c) != std::string::npos; }

// An equation in explicit form: the letters of each operand and of the output (no ellipsis).
struct EinsumEquation {
  std::vector<std::string> operands;
  std::string output;

  // "ij,jk->ik"
  std::string str() const;
};

// letter -> size.
using EinsumSizes = std::map<char, std::size_t>;

// The size of every letter of `eq` from the operands' shapes, which must match exactly (the user's
// subscripts, with ellipses and broadcasting, are resolved into such an equation by
// kernels/einsum/einsum_subscripts.h); output letters found in no operand take their size from
// `output_only`. Messages start with `einsum("<subscripts>")`. Throws
// ShapeError when operand k's rank differs from its number of letters or when one letter has two
// sizes (naming both operands and shapes), ValueError when an output letter cannot be sized.
EinsumSizes einsum_sizes(std::string_view subscripts, const EinsumEquation& eq, const std::vector<Shape>& shapes,
                         const EinsumSizes& output_only = {});

// The einsum of one or two operands. Validates as einsum_sizes does (quoting eq.str()); the
// output has shape [size of each output letter]. `output_only` may hold more letters than needed.
template <class T>
xt::xarray<T> einsum(const EinsumEquation& eq, const std::vector<const xt::xarray<T>*>& operands,
                     const EinsumSizes& output_only = {});

// Number of plans cached on the calling thread (for tests and diagnostics).
std::size_t einsum_cached_plans();

// Into how many chunks of the batch einsum<T> splits these operands' product (1: none), with
// sizeof(T) == element_size (for tests and diagnostics). Validates as einsum_sizes does.
std::size_t einsum_chunks(const EinsumEquation& eq, const std::vector<Shape>& shapes, std::size_t element_size);

}  // namespace tapegrad::kernels
