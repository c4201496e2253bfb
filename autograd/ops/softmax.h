#pragma once
// softmax and log_softmax over one axis, numerically stable (the row maximum is subtracted).
//
// A row whose entries are all -inf (e.g. attention whose every key is masked) is defined here,
// where PyTorch gives NaN: softmax gives all zeros and log_softmax all -inf, and the gradient
// flowing back into such a row is zero. Rows with at least one finite entry are exact.
#include "autograd/tensor.h"

namespace tapegrad {

template <class T> Tensor<T> softmax(const Tensor<T>& a, Index axis);
template <class T> Tensor<T> log_softmax(const Tensor<T>& a, Index axis);

}  // namespace tapegrad
