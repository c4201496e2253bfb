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
    : LayerStack<T, TransformerDecoderLayer<T>>("decoder_layers", tgt_vocab_size, max_len, pad_idx, d_model, N, d_ff,
                                                heads_num, dropout_rate, layer_norm_eps, gen, norm_first) {}

template <class T>
Tensor<T> TransformerDecoder<T>::forward(const IndexArray& tgt, const Tensor<T>& src,
                                         const std::optional<Mask>& mask_src_tgt, const std::optional<Mask>& mask_self) {
  return this->run(tgt, src, mask_src_tgt, mask_self);
}

template class TransformerDecoderLayer<float>;
template class TransformerDecoderLayer<double>;
template class TransformerDecoder<float>;
template class TransformerDecoder<double>;

}  // namespace tapegrad::nn::transformer
