#pragma once
// Reductions over all elements or over a list of axes (negative axes count from the end; an axis
// named twice is an error). keepdims keeps reduced axes with size 1.
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad {

using Axes = std::vector<Index>;

template <class T> Tensor<T> sum(const Tensor<T>& a);  // shape []
template <class T> Tensor<T> sum(const Tensor<T>& a, const Axes& axes, bool keepdims = false);
template <class T> Tensor<T> mean(const Tensor<T>& a);
template <class T> Tensor<T> mean(const Tensor<T>& a, const Axes& axes, bool keepdims = false);
// Maximum; the gradient is split evenly between tied maxima (PyTorch's amax rule).
template <class T> Tensor<T> max(const Tensor<T>& a);
template <class T> Tensor<T> max(const Tensor<T>& a, const Axes& axes, bool keepdims = false);

}  // namespace tapegrad
