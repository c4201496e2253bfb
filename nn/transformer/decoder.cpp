#include "nn/transformer/decoder.h"

#include "nn/transformer/sublayer_connection.h"

namespace tapegrad::nn::transformer {

template <class T>
TransformerDecoderLayer<T>::TransformerDecoderLayer(const LayerOptions& options, Generator& gen)
    : norm_first_(options.norm_first),
      self_attention_(this->register_module(
          "self_attention", std::make_shared<MultiHeadAttention<T>>(options.d_model, options.heads_num, gen))),
      dropout_self_attention_(
          this->register_module("dropout_self_attention", std::make_shared<Dropout<T>>(gen, options.dropout_rate))),
      layer_norm_self_attention_(this->register_module(
          "layer_norm_self_attention", std::make_shared<LayerNorm<T>>(options.d_model, options.layer_norm_eps))),
      src_tgt_attention_(this->register_module(
          "src_tgt_attention", std::make_shared<MultiHeadAttention<T>>(options.d_model, options.heads_num, gen))),
      dropout_src_tgt_attention_(
          this->register_module("dropout_src_tgt_attention", std::make_shared<Dropout<T>>(gen, options.dropout_rate))),
      layer_norm_src_tgt_attention_(this->register_module(
          "layer_norm_src_tgt_attention", std::make_shared<LayerNorm<T>>(options.d_model, options.layer_norm_eps))),
      ffn_(this->register_module("ffn", std::make_shared<FFN<T>>(options.d_model, options.d_ff, gen))),
      dropout_ffn_(this->register_module("dropout_ffn", std::make_shared<Dropout<T>>(gen, options.dropout_rate))),
      layer_norm_ffn_(this->register_module("layer_norm_ffn",
                                            std::make_shared<LayerNorm<T>>(options.d_model, options.layer_norm_eps))) {}

template <class T>
Tensor<T> TransformerDecoderLayer<T>::forward(const Tensor<T>& tgt, const Tensor<T>& src,
                                              const std::optional<AttendMask>& mask_src_tgt,
                                              const std::optional<AttendMask>& mask_self) {
  const Tensor<T> x =
      sublayer_connection(tgt, *layer_norm_self_attention_, *dropout_self_attention_, norm_first_,
                          [&](const Tensor<T>& y) { return (*self_attention_)(y, y, y, mask_self); });
  const Tensor<T> attended =
      sublayer_connection(x, *layer_norm_src_tgt_attention_, *dropout_src_tgt_attention_, norm_first_,
                          [&](const Tensor<T>& y) { return (*src_tgt_attention_)(y, src, src, mask_src_tgt); });
  return sublayer_connection(attended, *layer_norm_ffn_, *dropout_ffn_, norm_first_,
                             [&](const Tensor<T>& y) { return (*ffn_)(y); });
}

template <class T>
TransformerDecoder<T>::TransformerDecoder(const StackOptions& options, Generator& gen)
    : LayerStack<T, TransformerDecoderLayer<T>>("decoder_layers", options, gen) {}

template <class T>
Tensor<T> TransformerDecoder<T>::forward(const IndexArray& tgt, const Tensor<T>& src,
                                         const std::optional<AttendMask>& mask_src_tgt, const std::optional<AttendMask>& mask_self) {
  return this->run(tgt, src, mask_src_tgt, mask_self);
}

template class TransformerDecoderLayer<float>;
template class TransformerDecoderLayer<double>;
template class TransformerDecoder<float>;
template class TransformerDecoder<double>;

}  // namespace tapegrad::nn::transformer
