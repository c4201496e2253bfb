#pragma once
// Matrix products, through CBLAS.
#include <string_view>
#include <vector>

#include "autograd/core/tensor.h"

namespace tapegrad {

// torch.matmul. a [..., m, k] x b [..., k, n] -> [..., m, n], batch axes (all but the last two)
// broadcasting from the right. A 1-D a [k] is taken as [1, k] and a 1-D b [k] as [k, 1], and that
// axis is dropped from the result: [k] x [k] -> [] (dot product), [m, k] x [k] -> [m],
// [k] x [k, n] -> [n], [2, 1, m, k] x [5, k, n] -> [2, 5, m, n]. Backward: da = g b^T and
// db = a^T g, each summed over the batch axes its operand was broadcast along; each is a recorded
// product (transposes are BLAS flags, not copies) whose own gradients are such products again, so
// the backward can be differentiated (create_graph).
// ShapeError (naming both shapes) for a 0-dim operand, k mismatch, or batch axes that do not broadcast.
template <class T> Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b,
    CallSite where = std::source_location::current());

// torch.nn.functional.linear: y = x weight^T + bias, x [..., in], weight [out, in], bias [out] or
// undefined (no bias) -> y [..., out]. One GEMM reading weight transposed in place, the bias
// written first and accumulated onto (no transposed copy, no separate add). Backward: dx = g weight,
// dweight = g^T x over all leading axes folded into rows (matmul's backward products),
// dbias = g summed over those rows (an op whose own backward broadcasts back over the rows); all
// differentiable again (create_graph).
// ShapeError (naming the shapes) when x is 0-dim or its last axis is not `in`, weight is not 2-D,
// or bias is not [out].
template <class T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias = {},
                 CallSite where = std::source_location::current());

// einsum, as torch.einsum (PyTorch 1.13): out[output indices] = sum over every other index of
// prod_k operand_k[its indices]. Subscripts are letters a-z, A-Z, one group per operand, separated
// by ','; spaces are ignored. The output follows "->" ("ij,jk->ik"); without it, it is the
// ellipsis dims, then the indices that appear exactly once, in ASCII order (A-Z before a-z):
// "ba" transposes, "ii" is the trace. A repeated index in one operand takes its diagonal
// ("ii->i", "ii->"); an index in one operand only and not in the output is summed away ("ij->");
// indices in both operands and the output are batch indices ("bij,bjk->bik"); an index in one
// operand only but in the output gives outer products ("i,j->ij"). The reference designs' attention scores
// are einsum("ibhd,jbhd->ijbh", q, k): [i, b, h, d] x [j, b, h, d] -> [i, j, b, h].
// Broadcasting: "..." stands for an operand's unnamed dims, which align from the right and
// broadcast across operands ("...ij,...jk->...ik" of [2, 1, 3, 4] and [5, 4, 2] is [2, 5, 3, 2]),
// and an index may have size 1 in one operand and n in another (read as constant along it).
// One operand is one strided pass; two are one batched GEMM with strided passes around it (see
// kernels/einsum/einsum_plan.h); more are contracted left to right, pairwise. Ellipses become letters
// and broadcast size-1 axes are reshaped away before planning (kernels/einsum/einsum_subscripts.h).
// Backward: d operand = einsum(output, other operand -> operand's indices), recorded, so that it
// can be differentiated again (create_graph): the gradients of that einsum are einsums too.
// Errors quote the subscripts and name the operand: ValueError for a wrong operand count, an
// invalid character, a '.' outside "...", two ellipses in one group, a repeated output index, an
// output index in no operand, more than 52 distinct indices; ShapeError for an operand whose rank
// does not fit its subscripts, a repeated index with two sizes in one operand, and an index or
// ellipsis dim whose sizes do not broadcast.
template <class T> Tensor<T> einsum(std::string_view subscripts, const std::vector<Tensor<T>>& operands,
    CallSite where = std::source_location::current());
template <class T>
Tensor<T> einsum(std::string_view subscripts, const Tensor<T>& a,
    CallSite where = std::source_location::current()) {
  return einsum(subscripts, std::vector<Tensor<T>>{a}, where);
}
template <class T>
Tensor<T> einsum(std::string_view subscripts, const Tensor<T>& a, const Tensor<T>& b,
    CallSite where = std::source_location::current()) {
  return einsum(subscripts, std::vector<Tensor<T>>{a, b}, where);
}

}  // namespace tapegrad
