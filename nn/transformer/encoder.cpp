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
    : embedding_(this->register_module("embedding", std::make_shared<Embedding<T>>(vocab_size, d_model, pad_idx, gen))),
      positional_encoding_(this->register_module("positional_encoding",
                                                 std::make_shared<AddPositionalEncoding<T>>(d_model, max_len))),
      encoder_layers_(
          this->register_module("encoder_layers", std::make_shared<ModuleList<T, TransformerEncoderLayer<T>>>())) {
  for (std::size_t i = 0; i < N; ++i) {
    encoder_layers_->push_back(std::make_shared<TransformerEncoderLayer<T>>(d_model, d_ff, heads_num, dropout_rate,
                                                                            layer_norm_eps, gen, norm_first));
  }
  if (norm_first) norm_ = this->register_module("norm", std::make_shared<LayerNorm<T>>(d_model, layer_norm_eps));
}

template <class T>
Tensor<T> TransformerEncoder<T>::forward(const IndexArray& tokens, const std::optional<Mask>& mask) {
  Tensor<T> x = (*positional_encoding_)((*embedding_)(tokens));
  for (const auto& layer : *encoder_layers_) x = (*layer)(x, mask);
  return norm_ ? (*norm_)(x) : x;
}

template class TransformerEncoderLayer<float>;
template class TransformerEncoderLayer<double>;
template class TransformerEncoder<float>;
template class TransformerEncoder<double>;

}  // namespace tapegrad::nn::transformer
