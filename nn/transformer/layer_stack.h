#pragma once
// What the reference Transformer's encoder and decoder stacks share:
//   tokens [batch, seq] -> embedding -> positional_encoding -> <layers_name>.0 .. N-1
//   (-> norm, a final LayerNorm, only when norm_first) -> [batch, seq, d_model]
// Layer is TransformerEncoderLayer or TransformerDecoderLayer; run() passes each layer the running
// activations and the layer's own further arguments (masks, the encoder's output).
#include <memory>
#include <string>

#include "nn/containers.h"
#include "nn/layer_norm.h"
#include "nn/positional_encoding.h"
#include "nn/transformer/embedding.h"
#include "nn/transformer/options.h"

namespace tapegrad::nn::transformer {

template <class T, class Layer>
class LayerStack : public Module<T> {
 public:
  const Embedding<T>& embedding() const { return *embedding_; }

 protected:
  LayerStack(const std::string& layers_name, const StackOptions& options, Generator& gen)
      : embedding_(this->register_module(
            "embedding", std::make_shared<Embedding<T>>(options.vocab_size, options.layer.d_model, options.pad_idx, gen))),
        positional_encoding_(this->register_module(
            "positional_encoding", std::make_shared<AddPositionalEncoding<T>>(options.layer.d_model, options.max_len))),
        layers_(this->register_module(layers_name, make_layers(options, gen))) {
    if (options.layer.norm_first) {
      norm_ = this->register_module("norm",
                                    std::make_shared<LayerNorm<T>>(options.layer.d_model, options.layer.layer_norm_eps));
    }
  }

  template <class... LayerArgs>
  Tensor<T> run(const IndexArray& tokens, const LayerArgs&... layer_args) {
    Tensor<T> x = (*positional_encoding_)((*embedding_)(tokens));
    for (const auto& layer : *layers_) x = (*layer)(x, layer_args...);
    return norm_ ? (*norm_)(x) : x;
  }

  const ModuleList<T, Layer>& layers() const { return *layers_; }

 private:
  // Filled before it is registered: a parameter's tensor name grows into its dotted path as its
  // module is registered into parents (Module::add_child), so a layer pushed into a list already
  // registered would miss the list's name, and a stack used on its own would name
  // '0.ffn.linear1.weight' in messages where state_dict says 'encoder_layers.0.ffn.linear1.weight'.
  static std::shared_ptr<ModuleList<T, Layer>> make_layers(const StackOptions& options, Generator& gen) {
    auto layers = std::make_shared<ModuleList<T, Layer>>();
    for (std::size_t i = 0; i < options.N; ++i) layers->push_back(std::make_shared<Layer>(options.layer, gen));
    return layers;
  }

  std::shared_ptr<Embedding<T>> embedding_;
  std::shared_ptr<AddPositionalEncoding<T>> positional_encoding_;
  std::shared_ptr<ModuleList<T, Layer>> layers_;
  std::shared_ptr<LayerNorm<T>> norm_;  // null unless norm_first
};

}  // namespace tapegrad::nn::transformer
