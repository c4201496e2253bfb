#include "optim/sgd.h"

#include <cmath>

#include "autograd/base/checks.h"

namespace tapegrad::optim {

template <class T>
SGD<T>::SGD(std::vector<ParamGroup<T>> groups, const SGDOptions& options)
    : Optimizer<T>(std::move(groups), "SGD"), options_(options) {
  if (!(options.momentum >= 0.0) || !std::isfinite(options.momentum)) {
    throw ValueError("SGD: momentum must be finite and >= 0, got " + format_number(options.momentum));
  }
  if (!std::isfinite(options.dampening)) {
    throw ValueError("SGD: dampening must be finite, got " + format_number(options.dampening));
  }
  if (options.nesterov && (options.momentum <= 0.0 || options.dampening != 0.0)) {
    throw ValueError("SGD: nesterov needs momentum > 0 and dampening 0");
  }
}

template <class T>
SGD<T>::SGD(NamedParameters<T> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup<T>>{ParamGroup<T>{std::move(params), options.lr, options.weight_decay}}, options) {}

template <class T>
void SGD<T>::update(const ParamGroup<T>& group, Tensor<T>& param, const xt::xarray<T>& grad, std::size_t step,
                    StateMap<T>& buffers) {
  xt::xarray<T>& p = param.mutable_value();
  xt::xarray<T> g = group.weight_decay != 0.0 ? xt::xarray<T>(grad + static_cast<T>(group.weight_decay) * p) : grad;
  const T momentum = static_cast<T>(options_.momentum);
  if (momentum != T(0)) {
    auto it = buffers.find("momentum_buffer");
    if (it == buffers.end()) {
      it = buffers.emplace("momentum_buffer", g).first;
    } else {
      it->second = momentum * it->second + static_cast<T>(1.0 - options_.dampening) * g;
    }
    g = options_.nesterov ? xt::xarray<T>(g + momentum * it->second) : it->second;
  }
  p -= static_cast<T>(group.lr) * g;
}

template <class T>
std::vector<std::string> SGD<T>::buffer_names() const {
  if (options_.momentum != 0.0) return {"momentum_buffer"};
  return {};
}

template class SGD<float>;
template class SGD<double>;

}  // namespace tapegrad::optim
