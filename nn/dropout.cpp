#include "nn/dropout.h"

namespace tapegrad::nn {

namespace {
thread_local std::optional<BatchRows> current_rows;
}  // namespace

BatchRowsScope::BatchRowsScope(BatchRows rows) : previous_(current_rows) { current_rows = rows; }
BatchRowsScope::~BatchRowsScope() { current_rows = previous_; }
const std::optional<BatchRows>& BatchRowsScope::current() { return current_rows; }

template <class T>
Dropout<T>::Dropout(Generator& gen, double p) : p_(p), stream_(gen.next_u64()) {
  check_dropout_p(p, "Dropout");  // the op's rule, checked when the module is built
  this->register_generator("stream", &stream_);
}

template <class T>
Tensor<T> Dropout<T>::forward(const Tensor<T>& x) {
  if (const auto& rows = BatchRowsScope::current()) return dropout(x, p_, this->is_training(), stream_, *rows);
  return dropout(x, p_, this->is_training(), stream_);
}

template class Dropout<float>;
template class Dropout<double>;

}  // namespace tapegrad::nn
