#pragma once
// Matrix products, through CBLAS.
#include <string_view>
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad {

// torch.matmul: 1-D x 1-D is a dot product; 2-D x 2-D a matrix product; a 1-D operand gets a
// size-1 axis prepended (left) or appended (right) that is removed after; batch axes (all but
// the last two) broadcast.
template <class T> Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b);

// General einsum over one or more operands with explicit output ("ij,jk->ik") or implicit output
// (indices that appear once, in alphabetical order). Subscripts are letters a-z, A-Z. A repeated
// index in one operand takes its diagonal ("ii->i"); an index in one operand only and not in the
// output is summed away; indices shared by operands and the output are batch indices; an index in
// no operand's other places and in the output makes an outer product ("i,j->ij"). Two operands run
// as one batched GEMM; more are contracted left to right.
template <class T> Tensor<T> einsum(std::string_view subscripts, const std::vector<Tensor<T>>& operands);
template <class T> Tensor<T> einsum(std::string_view subscripts, const Tensor<T>& a) { return einsum(subscripts, std::vector<Tensor<T>>{a}); }
template <class T> Tensor<T> einsum(std::string_view subscripts, const Tensor<T>& a, const Tensor<T>& b) {
  return einsum(subscripts, std::vector<Tensor<T>>{a, b});
}

}  // namespace tapegrad
