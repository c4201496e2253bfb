#include "nn/transformer/encoder.h"

#include "nn/transformer/sublayer_connection.h"

namespace tapegrad::nn::transformer {

template <class T>
TransformerEncoderLayer<T>::TransformerEncoderLayer(const LayerOptions& options, Generator& gen)
    : norm_first_(options.norm_first),
      multi_head_attention_(this->register_module(
          "multi_head_attention", std::make_shared<MultiHeadAttention<T>>(options.d_model, options.heads_num, gen))),
      dropout_self_attention_(
          this->register_module("dropout_self_attention", std::make_shared<Dropout<T>>(gen, options.dropout_rate))),
      layer_norm_self_attention_(this->register_module(
          "layer_norm_self_attention", std::make_shared<LayerNorm<T>>(options.d_model, options.layer_norm_eps))),
      ffn_(this->register_module("ffn", std::make_shared<FFN<T>>(options.d_model, options.d_ff, gen))),
      dropout_ffn_(this->register_module("dropout_ffn", std::make_shared<Dropout<T>>(gen, options.dropout_rate))),
      layer_norm_ffn_(this->register_module("layer_norm_ffn",
                                            std::make_shared<LayerNorm<T>>(options.d_model, options.layer_norm_eps))) {}

template <class T>
Tensor<T> TransformerEncoderLayer<T>::forward(const Tensor<T>& x, const std::optional<AttendMask>& mask) {
  const Tensor<T> attended =
      sublayer_connection(x, *layer_norm_self_attention_, *dropout_self_attention_, norm_first_,
                          [&](const Tensor<T>& y) { return (*multi_head_attention_)(y, y, y, mask); });
  return sublayer_connection(attended, *layer_norm_ffn_, *dropout_ffn_, norm_first_,
                             [&](const Tensor<T>& y) { return (*ffn_)(y); });
}

template <class T>
TransformerEncoder<T>::TransformerEncoder(const StackOptions& options, Generator& gen)
    : LayerStack<T, TransformerEncoderLayer<T>>("encoder_layers", options, gen) {}

template <class T>
Tensor<T> TransformerEncoder<T>::forward(const IndexArray& tokens, const std::optional<AttendMask>& mask) {
  return this->run(tokens, mask);
}

template class TransformerEncoderLayer<float>;
template class TransformerEncoderLayer<double>;
template class TransformerEncoder<float>;
template class TransformerEncoder<double>;

}  // namespace tapegrad::nn::transformer
