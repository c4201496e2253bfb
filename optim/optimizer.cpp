#include "optim/optimizer.h"

#include "autograd/tape.h"

namespace tapegrad::optim {

template <class T>
Optimizer<T>::Optimizer(std::vector<ParamGroup<T>> groups) : groups_(std::move(groups)) {
  std::map<std::string, int> seen;
  for (const auto& group : groups_) {
    if (!(group.lr >= 0.0)) throw ValueError("Optimizer: learning rate must be >= 0, got " + std::to_string(group.lr));
    if (!(group.weight_decay >= 0.0)) {
      throw ValueError("Optimizer: weight_decay must be >= 0, got " + std::to_string(group.weight_decay));
    }
    for (const auto& [name, param] : group.params) {
      if (!param.defined()) throw ValueError("Optimizer: parameter '" + name + "' is undefined");
      if (seen[name]++) throw ValueError("Optimizer: parameter '" + name + "' appears twice");
    }
  }
}

template <class T>
void Optimizer<T>::step() {
  NoGradGuard no_recording;
  for (const auto& group : groups_) {
    for (auto [name, param] : group.params) {
      if (!param.has_grad()) continue;
      ParamState& s = state_[name];
      ++s.step;
      update(group, param, param.grad(), s.step, s.buffers);
    }
  }
}

template <class T>
void Optimizer<T>::zero_grad() {
  for (auto& group : groups_)
    for (auto& [name, param] : group.params) param.zero_grad();
}

template <class T>
StateMap<T> Optimizer<T>::state() const {
  StateMap<T> out;
  for (const auto& [name, s] : state_) {
    out[name + ".step"] = xt::xarray<T>(static_cast<T>(s.step));
    for (const auto& [buffer, value] : s.buffers) out[name + "." + buffer] = value;
  }
  return out;
}

template <class T>
void Optimizer<T>::load_state(const StateMap<T>& state) {
  std::map<std::string, const Tensor<T>*> params;
  for (const auto& group : groups_)
    for (const auto& [name, param] : group.params) params[name] = &param;
  std::map<std::string, ParamState> loaded;
  for (const auto& [key, value] : state) {
    // Parameter names contain dots, buffer names do not: split at the last one.
    const auto dot = key.rfind('.');
    const auto it = dot == std::string::npos ? params.end() : params.find(key.substr(0, dot));
    if (it == params.end()) throw ValueError("Optimizer::load_state: key '" + key + "' names no parameter of this optimiser");
    const std::string buffer = key.substr(dot + 1);
    if (buffer == "step") {
      loaded[it->first].step = static_cast<std::size_t>(value.size() == 1 ? *value.data() : T(0));
    } else if (value.shape() != it->second->value().shape()) {
      throw ShapeError("Optimizer::load_state: '" + key + "' has shape " + format_shape(value.shape()) +
                       " but its parameter has " + format_shape(it->second->value().shape()));
    } else {
      loaded[it->first].buffers[buffer] = value;
    }
  }
  state_ = std::move(loaded);
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace tapegrad::optim
