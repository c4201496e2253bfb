#pragma once
// One sublayer of a Transformer layer (attention or FFN) with dropout and a residual, in either
// arrangement:
//   post-LN (norm_first = false; the reference Transformer, the paper):       norm(x + dropout(sublayer(x)))
//   pre-LN  (norm_first = true;  The Annotated Transformer):  x + dropout(sublayer(norm(x)))
// Used by the encoder and decoder layers so both arrangements are written once.
#include <memory>
#include <string>
#include <utility>

#include "autograd/ops/operators.h"
#include "nn/dropout.h"
#include "nn/layer_norm.h"
#include "nn/module.h"
#include "nn/transformer/options.h"

namespace tapegrad::nn::transformer {

template <class T, class Sublayer>
Tensor<T> sublayer_connection(const Tensor<T>& x, LayerNorm<T>& norm, Dropout<T>& dropout, bool norm_first,
                              Sublayer&& sublayer) {
  if (norm_first) return x + dropout(sublayer(norm(x)));
  return norm(x + dropout(sublayer(x)));
}

// The dropout and layer norm around one sublayer, and the arrangement they run in.
template <class T>
struct Residual {
  std::shared_ptr<Dropout<T>> dropout;
  std::shared_ptr<LayerNorm<T>> layer_norm;
  bool norm_first;

  template <class Sublayer>
  Tensor<T> operator()(const Tensor<T>& x, Sublayer&& sublayer) const {
    return sublayer_connection(x, *layer_norm, *dropout, norm_first, std::forward<Sublayer>(sublayer));
  }
};

// The base of the encoder and decoder layers, whose sublayers each register their residual's
// modules through it.
template <class T>
class ResidualLayer : public Module<T> {
 protected:
  // Registers dropout_<sublayer> and then layer_norm_<sublayer>: the reference Transformer's attribute names and
  // order, which named_parameters(), checkpoints and the PyTorch interop read.
  Residual<T> register_residual(const std::string& sublayer, const LayerOptions& options, Generator& gen) {
    auto dropout = this->register_module("dropout_" + sublayer, std::make_shared<Dropout<T>>(gen, options.dropout_rate));
    auto layer_norm = this->register_module("layer_norm_" + sublayer,
                                            std::make_shared<LayerNorm<T>>(options.d_model, options.layer_norm_eps));
    return {std::move(dropout), std::move(layer_norm), options.norm_first};
  }
};

}  // namespace tapegrad::nn::transformer
