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
Transformer<T>::Transformer(const TransformerOptions& options, Generator& gen)
    : encoder_(this->register_module("encoder", std::make_shared<TransformerEncoder<T>>(options.encoder(), gen))),
      decoder_(this->register_module("decoder", std::make_shared<TransformerDecoder<T>>(options.decoder(), gen))),
      generator_(this->register_module(
          "generator", std::make_shared<OutputGenerator<T>>(options.layer.d_model, options.tgt_vocab_size, gen))) {}

template <class T>
Tensor<T> Transformer<T>::encode(const IndexArray& src, const std::optional<AttendMask>& src_mask) {
  return (*encoder_)(src, src_mask);
}

template <class T>
Tensor<T> Transformer<T>::decode(const Tensor<T>& memory, const std::optional<AttendMask>& src_mask, const IndexArray& tgt,
                                 const std::optional<AttendMask>& tgt_mask) {
  return (*decoder_)(tgt, memory, src_mask, tgt_mask);
}

template <class T>
Tensor<T> Transformer<T>::forward(const IndexArray& src, const IndexArray& tgt, const std::optional<AttendMask>& src_mask,
                                  const std::optional<AttendMask>& tgt_mask) {
  return decode(encode(src, src_mask), src_mask, tgt, tgt_mask);
}

template class OutputGenerator<float>;
template class OutputGenerator<double>;
template class Transformer<float>;
template class Transformer<double>;

}  // namespace tapegrad::nn::transformer
