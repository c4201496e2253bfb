#include "nn/transformer/decoder.h"

namespace tapegrad::nn::transformer {

template <class T>
TransformerDecoderLayer<T>::TransformerDecoderLayer(const LayerOptions& options, Generator& gen)
    : self_attention_(this->register_module(
          "self_attention", std::make_shared<MultiHeadAttention<T>>(options.d_model, options.heads_num, gen))),
      self_attention_residual_(this->register_residual("self_attention", options, gen)),
      src_tgt_attention_(this->register_module(
          "src_tgt_attention", std::make_shared<MultiHeadAttention<T>>(options.d_model, options.heads_num, gen))),
      src_tgt_attention_residual_(this->register_residual("src_tgt_attention", options, gen)),
      ffn_(this->register_module("ffn", std::make_shared<FFN<T>>(options.d_model, options.d_ff, gen))),
      ffn_residual_(this->register_residual("ffn", options, gen)) {}

template <class T>
Tensor<T> TransformerDecoderLayer<T>::forward(const Tensor<T>& tgt, const Tensor<T>& src,
                                              const std::optional<AttendMask>& mask_src_tgt,
                                              const std::optional<AttendMask>& mask_self) {
  const Tensor<T> x = self_attention_residual_(
      this->resid_pre(tgt), [&](const Tensor<T>& y) { return (*self_attention_)(y, y, y, mask_self); });
  const Tensor<T> attended = src_tgt_attention_residual_(
      x, [&](const Tensor<T>& y) { return (*src_tgt_attention_)(y, src, src, mask_src_tgt); });
  return ffn_residual_(attended, [&](const Tensor<T>& y) { return (*ffn_)(y); });
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
