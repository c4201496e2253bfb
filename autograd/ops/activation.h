#pragma once
// Activations, elementwise.
#include "autograd/tensor.h"

namespace tapegrad {

template <class T> Tensor<T> relu(const Tensor<T>& a);  // gradient 0 at a == 0, as PyTorch
template <class T> Tensor<T> sigmoid(const Tensor<T>& a);
template <class T> Tensor<T> tanh(const Tensor<T>& a);

enum class GeluApproximation { None, Tanh };
// GELU(x) = x * Phi(x) (erf form, PyTorch's default) or its tanh approximation.
template <class T> Tensor<T> gelu(const Tensor<T>& a, GeluApproximation approximate = GeluApproximation::None);

}  // namespace tapegrad
