#pragma once
// Parameter initialisers, PyTorch's definitions, drawing from a seeded Generator. They change the
// value in place and record nothing.
//
// Fans as PyTorch computes them: for a weight [out, in, k...], fan_in = in * prod(k), fan_out =
// out * prod(k); a 1-D tensor has fan_in = fan_out = its size.
#include <cstddef>
#include <utility>

#include "autograd/base/generator.h"
#include "autograd/core/tensor.h"

namespace tapegrad::nn::init {

template <class T> std::pair<std::size_t, std::size_t> fans(const Tensor<T>& t);  // (fan_in, fan_out)

template <class T> void uniform_(Tensor<T>& t, double low, double high, Generator& gen);
template <class T> void normal_(Tensor<T>& t, double mean, double std, Generator& gen);
template <class T> void constant_(Tensor<T>& t, double value);
template <class T> void zeros_(Tensor<T>& t) { constant_(t, 0.0); }
template <class T> void ones_(Tensor<T>& t) { constant_(t, 1.0); }
// U(-b, b) with b = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)); PyTorch's Linear uses
// a = sqrt(5), which gives b = 1 / sqrt(fan_in).
template <class T> void kaiming_uniform_(Tensor<T>& t, Generator& gen, double a = 0.0);
// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot; The Annotated Transformer
// re-initialises every matrix with it).
template <class T> void xavier_uniform_(Tensor<T>& t, Generator& gen, double gain = 1.0);

}  // namespace tapegrad::nn::init
