#include "nn/linear.h"

#include <cmath>

#include "autograd/base/checks.h"
#include "autograd/ops/linalg.h"
#include "nn/init.h"

namespace tapegrad::nn {

template <class T>
Linear<T>::Linear(std::size_t in_features, std::size_t out_features, Generator& gen, bool bias)
    : in_features_(in_features), out_features_(out_features) {
  if (in_features == 0 || out_features == 0) {
    throw ValueError("Linear: in_features and out_features must be positive, got " + std::to_string(in_features) +
                     " and " + std::to_string(out_features));
  }
  this->register_parameter("weight", weight_, Tensor<T>::zeros({out_features, in_features}));
  init::kaiming_uniform_(weight_, gen, std::sqrt(5.0));
  if (bias) {
    this->register_parameter("bias", bias_, Tensor<T>::zeros({out_features}));
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    init::uniform_(bias_, -bound, bound, gen);
  }
}

template <class T>
Tensor<T> Linear<T>::forward(const Tensor<T>& x) {
  // The module's name goes into messages only when there is one to write: forward runs every step.
  const auto who = [&] { return "Linear(" + std::to_string(in_features_) + ", " + std::to_string(out_features_) + ")"; };
  if (!x.defined()) throw undefined_argument(who(), "x");
  if (x.ndim() == 0 || x.size(-1) != in_features_) {
    throw ShapeError(who() + ": input " + x.describe() + " must end in an axis of size " + std::to_string(in_features_));
  }
  return linear(x, weight_, bias_);
}

template class Linear<float>;
template class Linear<double>;

}  // namespace tapegrad::nn
