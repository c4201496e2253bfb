#include "optim/optimizer.h"

#include <cmath>
#include <set>

#include "autograd/base/checks.h"
#include "autograd/core/tape.h"

namespace tapegrad::optim {

namespace {

// "[a, b]" for messages.
std::string bracketed(const std::set<std::string>& names) {
  std::string out = "[";
  for (const auto& name : names) out += (out.size() > 1 ? ", " : "") + name;
  return out + "]";
}

template <class T>
std::set<std::string> keys_of(const StateMap<T>& buffers) {
  std::set<std::string> keys;
  for (const auto& [key, value] : buffers) keys.insert(key);
  return keys;
}

}  // namespace

template <class T>
Optimizer<T>::Optimizer(std::vector<ParamGroup<T>> groups, std::string name)
    : groups_(std::move(groups)), name_(std::move(name)) {
  check_groups(groups_);
}

// The one rule for the parameters an optimiser holds, at construction and when a group is added.
template <class T>
void Optimizer<T>::check_groups(const std::vector<ParamGroup<T>>& groups) const {
  std::map<std::string, int> seen;
  // A tensor given twice (a tied weight under two names) would be updated twice per step.
  std::map<const Node<T>*, std::pair<std::string, std::size_t>> owner;  // tensor -> (first name, group)
  for (std::size_t i = 0; i < groups.size(); ++i) {
    check_group(groups[i], i);
    for (const auto& [param_name, param] : groups[i].params) {
      if (!param.defined()) {
        throw ValueError(name_ + ": parameter '" + param_name + "' (group " + std::to_string(i) + ") is undefined");
      }
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
    throw ValueError(name_ + ": no parameters to optimise (" + std::to_string(groups.size()) + " groups)");
}

template <class T>
void Optimizer<T>::add_param_group(ParamGroup<T> group) {
  std::vector<ParamGroup<T>> groups = groups_;
  groups.push_back(std::move(group));
  check_groups(groups);
  groups_ = std::move(groups);
}

template <class T>
void Optimizer<T>::check_group(const ParamGroup<T>& group, std::size_t i) const {
  const auto check = [&](const char* what, double value) {
    if (!std::isfinite(value) || value < 0.0) {
      throw ValueError(name_ + ": group " + std::to_string(i) + " " + what + " must be finite and >= 0, got " +
                       format_number(value));
    }
  };
  check("lr", group.lr);
  check("weight_decay", group.weight_decay);
}

// O(1) per parameter: the update kernels write as many elements as the gradient has into the
// value and into every buffer.
template <class T>
void Optimizer<T>::check_shapes_before_step() const {
  const std::string who = name_ + "::step: parameter '";
  for (const auto& group : groups_) {
    for (const auto& [name, param] : group.params) {
      if (!param.has_grad()) continue;
      const auto& shape = param.value().shape();
      if (param.grad().shape() != shape) {
        throw ShapeError(who + name + "' has shape " + format_shape(shape) + " but its gradient has " +
                         format_shape(param.grad().shape()));
      }
      const auto s = state_.find(name);
      if (s == state_.end()) continue;
      for (const auto& [buffer, value] : s->second.buffers) {
        if (value.shape() != shape) {
          throw ShapeError(who + name + "' has shape " + format_shape(shape) + " but its state buffer '" + buffer +
                           "' has " + format_shape(value.shape()) +
                           " (its value was replaced with another shape after its first step)");
        }
      }
    }
  }
}

template <class T>
void Optimizer<T>::step() {
  for (std::size_t i = 0; i < groups_.size(); ++i) check_group(groups_[i], i);
  check_shapes_before_step();
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
    for (auto [name, param] : group.params) param.zero_grad();
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

// Each key's value, checked on its own, grouped by parameter.
template <class T>
std::map<std::string, typename Optimizer<T>::ParamState> Optimizer<T>::parse_state(const StateMap<T>& state) const {
  std::map<std::string, const Tensor<T>*> params;
  for (const auto& group : groups_)
    for (const auto& [name, param] : group.params) params[name] = &param;
  std::map<std::string, ParamState> parsed;
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
      if (!(step >= 1.0) || step != std::floor(step) || step > 1e15) {
        throw ValueError(who + " must be a whole number >= 1 (the updates the parameter has had), got " +
                         format_number(step));
      }
      // Present from here on: a parameter with buffers but no step is caught by its 0.
      parsed[it->first].step = static_cast<std::size_t>(step);
    } else if (value.shape() != it->second->value().shape()) {
      throw ShapeError(who + " has shape " + format_shape(value.shape()) + " but its parameter has " +
                       format_shape(it->second->value().shape()));
    } else {
      parsed[it->first].buffers[buffer] = value;
    }
  }
  return parsed;
}

// Another optimiser's state (SGD's momentum_buffer in Adam), one saved with other options
// (amsgrad's max_exp_avg_sq) or a misspelt buffer would otherwise restart or skip a moment, and a
// missing step would restart the bias correction.
template <class T>
void Optimizer<T>::check_buffer_names(const std::string& param, const ParamState& s) const {
  const std::string who = name_ + "::load_state: parameter '" + param + "'";
  const auto expected_list = buffer_names();
  const std::set<std::string> expected(expected_list.begin(), expected_list.end()), got = keys_of(s.buffers);
  if (s.step == 0) {
    throw ValueError(who + " has buffers " + bracketed(got) + " but no step ('" + param +
                     ".step'); the step count sets the update (Adam's bias correction)");
  }
  if (got != expected) {
    std::set<std::string> missing, unknown;
    for (const auto& b : expected)
      if (!got.count(b)) missing.insert(b);
    for (const auto& b : got)
      if (!expected.count(b)) unknown.insert(b);
    throw ValueError(who + " has buffers " + bracketed(got) + " but " + name_ + " keeps " + bracketed(expected) +
                     " (missing " + bracketed(missing) + ", unknown " + bracketed(unknown) +
                     "): a state saved by another optimiser, or with other options?");
  }
}

template <class T>
void Optimizer<T>::load_state(const StateMap<T>& state) {
  std::map<std::string, ParamState> loaded = parse_state(state);
  for (const auto& [param, s] : loaded) check_buffer_names(param, s);
  state_ = std::move(loaded);
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace tapegrad::optim
