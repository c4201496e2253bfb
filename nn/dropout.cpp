#include "nn/dropout.h"

#include "autograd/ops/masking.h"

namespace tapegrad::nn {

template <class T>
Dropout<T>::Dropout(Generator& gen, double p) : p_(p), stream_(gen.next_u64()) {
  check_dropout_p(p, "Dropout");  // the op's rule, checked when the module is built
  this->register_generator("stream", &stream_);
}

template <class T>
Tensor<T> Dropout<T>::forward(const Tensor<T>& x) {
  return dropout(x, p_, this->is_training(), stream_);
}

template class Dropout<float>;
template class Dropout<double>;

}  // namespace tapegrad::nn
