#include "nn/transformer/decoder.h"

#include "nn/transformer/sublayer_connection.h"

namespace tapegrad::nn::transformer {

template <class T>
TransformerDecoderLayer<T>::TransformerDecoderLayer(std::size_t d_model, std::size_t d_ff, std::size_t heads_num,
                                                    double dropout_rate, double layer_norm_eps, Generator& gen,
                                                    bool norm_first)
    : norm_first_(norm_first),
      self_attention_(
          this->register_module("self_attention", std::make_shared<MultiHeadAttention<T>>(d_model, heads_num, gen))),
      dropout_self_attention_(
          this->register_module("dropout_self_attention", std::make_shared<Dropout<T>>(gen, dropout_rate))),
      layer_norm_self_attention_(this->register_module("layer_norm_self_attention",
                                                       std::make_shared<LayerNorm<T>>(d_model, layer_norm_eps))),
      src_tgt_attention_(this->register_module("src_tgt_attention",
                                               std::make_shared<MultiHeadAttention<T>>(d_model, heads_num, gen))),
      dropout_src_tgt_attention_(
          this->register_module("dropout_src_tgt_attention", std::make_shared<Dropout<T>>(gen, dropout_rate))),
      layer_norm_src_tgt_attention_(this->register_module("layer_norm_src_tgt_attention",
                                                          std::make_shared<LayerNorm<T>>(d_model, layer_norm_eps))),
      ffn_(this->register_module("ffn", std::make_shared<FFN<T>>(d_model, d_ff, gen))),
      dropout_ffn_(this->register_module("dropout_ffn", std::make_shared<Dropout<T>>(gen, dropout_rate))),
      layer_norm_ffn_(
          this->register_module("layer_norm_ffn", std::make_shared<LayerNorm<T>>(d_model, layer_norm_eps))) {}

template <class T>
Tensor<T> TransformerDecoderLayer<T>::forward(const Tensor<T>& tgt, const Tensor<T>& src,
                                              const std::optional<Mask>& mask_src_tgt,
                                              const std::optional<Mask>& mask_self) {
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
TransformerDecoder<T>::TransformerDecoder(std::size_t tgt_vocab_size, std::size_t max_len, Index pad_idx,
                                          std::size_t d_model, std::size_t N, std::size_t d_ff, std::size_t heads_num,
                                          double dropout_rate, double layer_norm_eps, Generator& gen, bool norm_first)
    : embedding_(
          this->register_module("embedding", std::make_shared<Embedding<T>>(tgt_vocab_size, d_model, pad_idx, gen))),
      positional_encoding_(this->register_module("positional_encoding",
                                                 std::make_shared<AddPositionalEncoding<T>>(d_model, max_len))),
      decoder_layers_(
          this->register_module("decoder_layers", std::make_shared<ModuleList<T, TransformerDecoderLayer<T>>>())) {
  for (std::size_t i = 0; i < N; ++i) {
    decoder_layers_->push_back(std::make_shared<TransformerDecoderLayer<T>>(d_model, d_ff, heads_num, dropout_rate,
                                                                            layer_norm_eps, gen, norm_first));
  }
  if (norm_first) norm_ = this->register_module("norm", std::make_shared<LayerNorm<T>>(d_model, layer_norm_eps));
}

template <class T>
Tensor<T> TransformerDecoder<T>::forward(const IndexArray& tgt, const Tensor<T>& src,
                                         const std::optional<Mask>& mask_src_tgt, const std::optional<Mask>& mask_self) {
  Tensor<T> x = (*positional_encoding_)((*embedding_)(tgt));
  for (const auto& layer : *decoder_layers_) x = (*layer)(x, src, mask_src_tgt, mask_self);
  return norm_ ? (*norm_)(x) : x;
}

template class TransformerDecoderLayer<float>;
template class TransformerDecoderLayer<double>;
template class TransformerDecoder<float>;
template class TransformerDecoder<double>;

}  // namespace tapegrad::nn::transformer
