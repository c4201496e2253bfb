#include "nn/transformer/encoder.h"

namespace tapegrad::nn::transformer {

template <class T>
TransformerEncoderLayer<T>::TransformerEncoderLayer(const LayerOptions& options, Generator& gen)
    : multi_head_attention_(this->register_module(
          "multi_head_attention", std::make_shared<MultiHeadAttention<T>>(options.d_model, options.heads_num, gen))),
      self_attention_residual_(this->register_residual("self_attention", options, gen)),
      ffn_(this->register_module("ffn", std::make_shared<FFN<T>>(options.d_model, options.d_ff, gen))),
      ffn_residual_(this->register_residual("ffn", options, gen)) {}

template <class T>
Tensor<T> TransformerEncoderLayer<T>::forward(const Tensor<T>& x, const std::optional<AttendMask>& mask) {
  const Tensor<T> attended = self_attention_residual_(
      this->resid_pre(x), [&](const Tensor<T>& y) { return (*multi_head_attention_)(y, y, y, mask); });
  return ffn_residual_(attended, [&](const Tensor<T>& y) { return (*ffn_)(y); });
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
