#include "nn/transformer/transformer.h"

#include "autograd/ops/softmax.h"

namespace tapegrad::nn::transformer {

template <class T>
OutputGenerator<T>::OutputGenerator(std::size_t d_model, std::size_t vocab, Generator& gen)
    : proj_(this->register_module("proj", std::make_shared<Linear<T>>(d_model, vocab, gen))) {}

template <class T>
Tensor<T> OutputGenerator<T>::forward(const Tensor<T>& x) {
  return log_softmax((*proj_)(x), -1);
}

template <class T>
Transformer<T>::Transformer(std::size_t src_vocab_size, std::size_t tgt_vocab_size, std::size_t max_len, Index pad_idx,
                            std::size_t d_model, std::size_t N, std::size_t d_ff, std::size_t heads_num,
                            double dropout_rate, double layer_norm_eps, Generator& gen, bool norm_first)
    : encoder_(this->register_module(
          "encoder", std::make_shared<TransformerEncoder<T>>(src_vocab_size, max_len, pad_idx, d_model, N, d_ff,
                                                             heads_num, dropout_rate, layer_norm_eps, gen, norm_first))),
      decoder_(this->register_module(
          "decoder", std::make_shared<TransformerDecoder<T>>(tgt_vocab_size, max_len, pad_idx, d_model, N, d_ff,
                                                             heads_num, dropout_rate, layer_norm_eps, gen, norm_first))),
      generator_(this->register_module("generator", std::make_shared<OutputGenerator<T>>(d_model, tgt_vocab_size, gen))) {}

template <class T>
Tensor<T> Transformer<T>::encode(const IndexArray& src, const std::optional<Mask>& src_mask) {
  return (*encoder_)(src, src_mask);
}

template <class T>
Tensor<T> Transformer<T>::decode(const Tensor<T>& memory, const std::optional<Mask>& src_mask, const IndexArray& tgt,
                                 const std::optional<Mask>& tgt_mask) {
  return (*decoder_)(tgt, memory, src_mask, tgt_mask);
}

template <class T>
Tensor<T> Transformer<T>::forward(const IndexArray& src, const IndexArray& tgt, const std::optional<Mask>& src_mask,
                                  const std::optional<Mask>& tgt_mask) {
  return decode(encode(src, src_mask), src_mask, tgt, tgt_mask);
}

template class OutputGenerator<float>;
template class OutputGenerator<double>;
template class Transformer<float>;
template class Transformer<double>;

}  // namespace tapegrad::nn::transformer
