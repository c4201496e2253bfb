#pragma once
// einsum's user-facing grammar, as torch.einsum (PyTorch 1.13) reads it, resolved against the
// operands' shapes into the explicit equation that kernels/einsum/einsum_plan.h evaluates. Keeping the
// grammar here leaves the planner and its GEMM fast paths untouched by it: an ellipsis becomes
// ordinary letters, and a size-1 axis that broadcasts becomes no axis at all.
//
// Grammar: letters a-z, A-Z, one group per operand, separated by ','; spaces ignored; an
// optional "->" followed by the output letters. In each operand and in the output, "..." may
// stand once for the dims no letter names.
//   - Ellipsis: the dims operand k's "..." covers (its rank minus its letters) align from the
//     right with every other operand's and broadcast as tensors do (equal, or 1); the output's
//     "..." is their broadcast shape. An operand's "..." may cover no dim; so may the output's
//     when no operand has one ("ij->..." is a full sum, as torch allows). Without "->", the
//     output is the ellipsis dims, then the letters that appear exactly once over all operands,
//     in ASCII order (A-Z before a-z): "ba" is "ba->ab", "ii" a trace, "...ij,...jk" "...ik".
//   - Broadcasting within a letter: a letter may have size 1 in some operands and n in others
//     ("ij,jk" of [3,1] and [4,5]); it has size n, and an operand with size 1 is read as
//     constant along it. A letter repeated within one operand (a diagonal) needs equal sizes.
// Resolution: the ellipses become letters that the subscripts do not use (so at most 52 distinct
// indices in all), and each operand's size-1 axes whose letter has another size are dropped
// from its letters and shape: an operand constant along j is simply an operand without j, so
// sum_j a[i] b[j,k] = a[i] sum_j b[j,k] falls out of the ordinary plan, with no expanded copy.
#include <string_view>
#include <vector>

#include "autograd/kernels/einsum/einsum_plan.h"

namespace tapegrad::kernels {

struct ResolvedEinsum {
  EinsumEquation eq;          // explicit letters, no ellipsis, no broadcast axis
  std::vector<Shape> shapes;  // operand k read as shapes[k]: its shape without its broadcast axes
  EinsumSizes sizes;          // every letter's (broadcast) size
};

// Resolves `subscripts` for operands of these shapes. Messages start with
// einsum("<subscripts>") and name the operand and its shape. ValueError for: a wrong number of
// operands, an invalid character, a '.' outside "...", two ellipses in one operand or in the
// output, a malformed arrow, a letter repeated in the output or found in no operand, more
// distinct indices than the 52 letters (counting the ellipsis dims). ShapeError for: an operand
// whose rank differs from its letters (or is below them, with an ellipsis), a letter repeated in
// one operand with two sizes, a letter or an ellipsis dim whose sizes do not broadcast.
ResolvedEinsum resolve_einsum(std::string_view subscripts, const std::vector<Shape>& shapes);

}  // namespace tapegrad::kernels
