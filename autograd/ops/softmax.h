#pragma once
// softmax and log_softmax over one axis (negative axes count from the end); the output has the
// input's shape. A 0-d tensor takes axis 0 or -1 (PyTorch) and is one lane of one element. Along the axis, with m = max_j x_j subtracted for numerical stability:
//   softmax(x)_i     = exp(x_i - m) / sum_j exp(x_j - m)
//   log_softmax(x)_i = x_i - m - log(sum_j exp(x_j - m))
// Backward: softmax dx = y * (g - sum_j g_j y_j); log_softmax dx = g - exp(y) * sum_j g_j. The forward
// saves only its output. A bad axis is a ValueError naming the op, the axis and the shape.
// Each backward is a fused op of its own (softmax_backward, log_softmax_backward) whose backward,
// written with tapegrad's ops, gives the second derivative (create_graph).
//
// A row whose entries are all -inf (e.g. attention whose every key is masked) is defined here,
// where PyTorch gives NaN: softmax gives all zeros and log_softmax all -inf, and the gradient
// flowing back into such a row is zero. Rows with at least one finite entry are exact: their -inf
// entries get probability exactly 0 (log-probability -inf). A NaN makes its whole row NaN.

#include "autograd/core/tensor.h"

namespace tapegrad {

template <class T> Tensor<T> softmax(const Tensor<T>& a, Index axis,
    CallSite where = std::source_location::current());
template <class T> Tensor<T> log_softmax(const Tensor<T>& a, Index axis,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
