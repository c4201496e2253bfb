#pragma once
// One sublayer of a Transformer layer (attention or FFN) with dropout and a residual, in either
// arrangement:
//   post-LN (norm_first = false; seed 004, the paper):       norm(x + dropout(sublayer(x)))
//   pre-LN  (norm_first = true;  The Annotated Transformer):  x + dropout(sublayer(norm(x)))
// Used by the encoder and decoder layers so both arrangements are written once.
#include "autograd/ops/elementwise.h"
#include "nn/dropout.h"
#include "nn/layer_norm.h"

namespace tapegrad::nn::transformer {

template <class T, class Sublayer>
Tensor<T> sublayer_connection(const Tensor<T>& x, LayerNorm<T>& norm, Dropout<T>& dropout, bool norm_first,
                              Sublayer&& sublayer) {
  if (norm_first) return x + dropout(sublayer(norm(x)));
  return norm(x + dropout(sublayer(x)));
}

}  // namespace tapegrad::nn::transformer
