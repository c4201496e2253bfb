#pragma once
// Activations, elementwise: the output has the input's shape. The backward of relu, sigmoid and
// tanh reads only the saved output; gelu's reads the input. Each backward is an op of its own (one
// fused pass) that differentiates again under create_graph, by the second derivatives:
// relu'' = 0, sigmoid'' = y (1 - y) (1 - 2y), tanh'' = -2 y (1 - y^2), gelu'' below.

#include "autograd/core/tensor.h"

namespace tapegrad {

// relu(x) = max(x, 0); d/dx = 1 for x > 0, else 0 (0 at x == 0, as PyTorch). NaN passes through.
template <class T> Tensor<T> relu(const Tensor<T>& a, CallSite where = std::source_location::current());
// sigmoid(x) = 1 / (1 + exp(-x)), computed without overflow for large |x|; d/dx = y (1 - y).
template <class T> Tensor<T> sigmoid(const Tensor<T>& a, CallSite where = std::source_location::current());
// tanh(x); d/dx = 1 - y^2.
template <class T> Tensor<T> tanh(const Tensor<T>& a, CallSite where = std::source_location::current());

enum class GeluApproximation { None, Tanh };
// GELU, PyTorch's two forms:
//   None (default): y = x Phi(x),  Phi(x) = (1 + erf(x / sqrt 2)) / 2;
//                   d/dx = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi).
//   Tanh:           y = x (1 + tanh u) / 2,  u = sqrt(2/pi) (x + 0.044715 x^3);
//                   d/dx = (1 + t) / 2 + x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2) / 2, t = tanh u.
//   d2/dx2: None: exp(-x^2 / 2) (2 - x^2) / sqrt(2 pi);  Tanh: (1 - t^2) (u' + x u'' / 2 - x t u'^2).
template <class T> Tensor<T> gelu(const Tensor<T>& a, GeluApproximation approximate = GeluApproximation::None,
    CallSite where = std::source_location::current());

// softplus(x) = log(1 + exp(beta x)) / beta where beta x <= threshold, and x above it (PyTorch's
// linear region, which keeps exp from overflowing): defaults beta = 1, threshold = 20, as
// torch.nn.functional.softplus. d/dx = sigmoid(beta x) in the soft region, 1 in the linear one;
// d2/dx2 = beta s (1 - s), s = sigmoid(beta x), and 0. A negative beta is allowed (as PyTorch);
// beta 0 (PyTorch gives inf), a non-finite beta or a NaN threshold is a ValueError.
template <class T> Tensor<T> softplus(const Tensor<T>& a, double beta = 1.0, double threshold = 20.0,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
