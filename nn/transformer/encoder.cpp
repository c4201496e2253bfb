#include "nn/transformer/encoder.h"

#include "nn/transformer/sublayer_connection.h"

namespace tapegrad::nn::transformer {

template <class T>
TransformerEncoderLayer<T>::TransformerEncoderLayer(std::size_t d_model, std::size_t d_ff, std::size_t heads_num,
                                                    double dropout_rate, double layer_norm_eps, Generator& gen,
                                                    bool norm_first)
    : norm_first_(norm_first),
      multi_head_attention_(this->register_module("multi_head_attention",
                                                  std::make_shared<MultiHeadAttention<T>>(d_model, heads_num, gen))),
      dropout_self_attention_(
          this->register_module("dropout_self_attention", std::make_shared<Dropout<T>>(gen, dropout_rate))),
      layer_norm_self_attention_(this->register_module("layer_norm_self_attention",
                                                       std::make_shared<LayerNorm<T>>(d_model, layer_norm_eps))),
      ffn_(this->register_module("ffn", std::make_shared<FFN<T>>(d_model, d_ff, gen))),
      dropout_ffn_(this->register_module("dropout_ffn", std::make_shared<Dropout<T>>(gen, dropout_rate))),
      layer_norm_ffn_(
          this->register_module("layer_norm_ffn", std::make_shared<LayerNorm<T>>(d_model, layer_norm_eps))) {}

template <class T>
Tensor<T> TransformerEncoderLayer<T>::forward(const Tensor<T>& x, const std::optional<Mask>& mask) {
  const Tensor<T> attended =
      sublayer_connection(x, *layer_norm_self_attention_, *dropout_self_attention_, norm_first_,
                          [&](const Tensor<T>& y) { return (*multi_head_attention_)(y, y, y, mask); });
  return sublayer_connection(attended, *layer_norm_ffn_, *dropout_ffn_, norm_first_,
                             [&](const Tensor<T>& y) { return (*ffn_)(y); });
}

template <class T>
TransformerEncoder<T>::TransformerEncoder(std::size_t vocab_size, std::size_t max_len, Index pad_idx,
                                          std::size_t d_model, std::size_t N, std::size_t d_ff, std::size_t heads_num,
                                          double dropout_rate, double layer_norm_eps, Generator& gen, bool norm_first)
    : LayerStack<T, TransformerEncoderLayer<T>>("encoder_layers", vocab_size, max_len, pad_idx, d_model, N, d_ff,
                                                heads_num, dropout_rate, layer_norm_eps, gen, norm_first) {}

template <class T>
Tensor<T> TransformerEncoder<T>::forward(const IndexArray& tokens, const std::optional<Mask>& mask) {
  return this->run(tokens, mask);
}

template class TransformerEncoderLayer<float>;
template class TransformerEncoderLayer<double>;
template class TransformerEncoder<float>;
template class TransformerEncoder<double>;

}  // namespace tapegrad::nn::transformer
