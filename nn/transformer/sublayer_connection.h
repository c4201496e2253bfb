#pragma once
// One sublayer of a Transformer layer (attention or FFN) with dropout and a residual, in either
// arrangement:
//   post-LN (norm_first = false; the reference Transformer, the paper):       norm(x + dropout(sublayer(x)))
//   pre-LN  (norm_first = true;  The Annotated Transformer):  x + dropout(sublayer(norm(x)))
// Used by the encoder and decoder layers so both arrangements are written once.
#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "autograd/ops/operators.h"
#include "nn/dropout.h"
#include "nn/hook_point.h"
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

// The dropout and layer norm around one sublayer, the arrangement they run in, and the hook points
// on the sublayer's output and on the residual stream the connection returns.
template <class T>
struct Residual {
  std::shared_ptr<Dropout<T>> dropout;
  std::shared_ptr<LayerNorm<T>> layer_norm;
  bool norm_first;
  HookPoint<T>* out;
  HookPoint<T>* after;

  template <class Sublayer>
  Tensor<T> operator()(const Tensor<T>& x, Sublayer&& sublayer) const {
    const auto through_out = [&](const Tensor<T>& input) { return (*out)(sublayer(input)); };
    return (*after)(sublayer_connection(x, *layer_norm, *dropout, norm_first, through_out));
  }
};

// The base of the encoder and decoder layers, whose sublayers each register their residual's
// modules through it.
//
// Hook points on the residual stream (nn/hook_point.h), each [batch, seq, d_model]:
//   hook_resid_pre               the layer's input, what its first sublayer reads;
//   hook_<sublayer>_out          the sublayer's output, what it adds to the stream (before the
//                                dropout in front of the add; TransformerLens's hook_attn_out and
//                                hook_mlp_out);
//   hook_resid_after_<sublayer>  what the connection around <sublayer> returns (after the norm in
//                                post-LN), what the next sublayer reads; after the last, the output.
template <class T>
class ResidualLayer : public Module<T> {
 protected:
  // The layer's input through hook_resid_pre: the first thing forward does.
  Tensor<T> resid_pre(const Tensor<T>& x) const { return resid_pre_(x); }

  // Registers dropout_<sublayer> and then layer_norm_<sublayer>: the reference Transformer's attribute names and
  // order, which named_parameters(), checkpoints and the PyTorch interop read; then the points
  // hook_<sublayer>_out and hook_resid_after_<sublayer>.
  Residual<T> register_residual(const std::string& sublayer, const LayerOptions& options, Generator& gen) {
    auto dropout = this->register_module("dropout_" + sublayer, std::make_shared<Dropout<T>>(gen, options.dropout_rate));
    auto layer_norm = this->register_module("layer_norm_" + sublayer,
                                            std::make_shared<LayerNorm<T>>(options.d_model, options.layer_norm_eps));
    // The first registration also registers hook_resid_pre (not the constructor: a point's
    // registration names its module by type_name(), which a base's constructor cannot call).
    if (residual_points_.empty()) this->register_hook_point("hook_resid_pre", resid_pre_);
    HookPoint<T>& out = residual_points_.emplace_back();
    this->register_hook_point("hook_" + sublayer + "_out", out);
    HookPoint<T>& after = residual_points_.emplace_back();
    this->register_hook_point("hook_resid_after_" + sublayer, after);
    return {std::move(dropout), std::move(layer_norm), options.norm_first, &out, &after};
  }

 private:
  HookPoint<T> resid_pre_;
  std::deque<HookPoint<T>> residual_points_;  // a deque: registered points must not move
};

}  // namespace tapegrad::nn::transformer
