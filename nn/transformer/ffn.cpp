#include "nn/transformer/ffn.h"

#include "autograd/ops/activation.h"

namespace tapegrad::nn::transformer {

template <class T>
FFN<T>::FFN(std::size_t d_model, std::size_t d_ff, Generator& gen)
    : linear1_(this->register_module("linear1", std::make_shared<Linear<T>>(d_model, d_ff, gen))),
      linear2_(this->register_module("linear2", std::make_shared<Linear<T>>(d_ff, d_model, gen))) {}

template <class T>
Tensor<T> FFN<T>::forward(const Tensor<T>& x) {
  return (*linear2_)(relu((*linear1_)(x)));
}

template class FFN<float>;
template class FFN<double>;

}  // namespace tapegrad::nn::transformer
