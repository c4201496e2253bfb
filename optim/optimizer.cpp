#include "optim/optimizer.h"

#include <cmath>

#include "autograd/validation.h"
#include "autograd/tape.h"

namespace tapegrad::optim {

template <class T>
Optimizer<T>::Optimizer(std::vector<ParamGroup<T>> groups, std::string name)
    : groups_(std::move(groups)), name_(std::move(name)) {
  std::map<std::string, int> seen;
  // A tensor given twice (a tied weight under two names) would be updated twice per step.
  std::map<const Node<T>*, std::pair<std::string, std::size_t>> owner;  // tensor -> (first name, group)
  for (std::size_t i = 0; i < groups_.size(); ++i) {
    check_group(i);
    for (const auto& [param_name, param] : groups_[i].params) {
      if (!param.defined()) throw ValueError(name_ + ": parameter '" + param_name + "' is undefined");
      if (seen[param_name]++) throw ValueError(name_ + ": parameter '" + param_name + "' appears twice");
      const auto [first, inserted] = owner.emplace(param.node().get(), std::make_pair(param_name, i));
      if (!inserted) {
        const auto& [first_name, first_group] = first->second;
        throw ValueError(name_ + ": parameters '" + first_name + "' (group " + std::to_string(first_group) +
                         ") and '" + param_name + "' (group " + std::to_string(i) +
                         ") are one shared tensor; give it once (Module::named_parameters() lists a shared "
                         "parameter once)");
      }
    }
  }
  if (seen.empty())
    throw ValueError(name_ + ": no parameters to optimise (" + std::to_string(groups_.size()) + " groups)");
}

template <class T>
void Optimizer<T>::check_group(std::size_t i) const {
  const auto check = [&](const char* what, double value) {
    if (!std::isfinite(value) || value < 0.0) {
      throw ValueError(name_ + ": group " + std::to_string(i) + " " + what + " must be finite and >= 0, got " +
                       format_number(value));
    }
  };
  check("lr", groups_[i].lr);
  check("weight_decay", groups_[i].weight_decay);
}

template <class T>
void Optimizer<T>::step() {
  for (std::size_t i = 0; i < groups_.size(); ++i) check_group(i);
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
    const std::string who = name_ + "::load_state: '" + key + "'";
    if (it == params.end()) {
      throw ValueError(who + " names no parameter of this optimiser (keys are '<parameter>.<buffer>')");
    }
    const std::string buffer = key.substr(dot + 1);
    if (buffer == "step") {
      if (value.dimension() != 0) throw ShapeError(who + " has shape " + format_shape(value.shape()) + ", not []");
      const double step = static_cast<double>(value());
      if (!(step >= 0.0) || step != std::floor(step) || step > 1e15) {
        throw ValueError(who + " must be a whole number >= 0, got " + format_number(step));
      }
      loaded[it->first].step = static_cast<std::size_t>(step);
    } else if (value.shape() != it->second->value().shape()) {
      throw ShapeError(who + " has shape " + format_shape(value.shape()) + " but its parameter has " +
                       format_shape(it->second->value().shape()));
    } else {
      loaded[it->first].buffers[buffer] = value;
    }
  }
  state_ = std::move(loaded);
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace tapegrad::optim
