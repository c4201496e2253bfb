#include "nn/functional_call.h"

#include <algorithm>

#include "autograd/base/checks.h"

namespace tapegrad::nn {

namespace {

// A place a parameter is registered: its dotted name, and its entry in the owner's parameters.
template <class T>
struct Place {
  std::string name;
  Module<T>* owner;
  std::size_t index;
};

std::string quoted_list(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
  return list.empty() ? "none" : list;
}

}  // namespace

template <class T>
ParameterSubstitution<T>::ParameterSubstitution(Module<T>& module, const std::vector<std::string>& names,
                                                const std::vector<Tensor<T>>& tensors) {
  if (names.size() != tensors.size()) {
    throw ValueError("functional_call: " + std::to_string(names.size()) + " names for " +
                     std::to_string(tensors.size()) + " tensors; give one tensor per name");
  }
  std::vector<Place<T>> places;
  const auto collect = [&places](const auto& self, Module<T>& m, const std::string& prefix) -> void {
    for (std::size_t i = 0; i < m.parameters_.size(); ++i) places.push_back({prefix + m.parameters_[i].first, &m, i});
    for (const auto& [name, child] : m.children_) self(self, *child, prefix + name + ".");
  };
  collect(collect, module, "");
  const auto parameter_at = [](const Place<T>& p) -> const Tensor<T>& { return p.owner->parameters_[p.index].second; };

  // The substitute of each distinct parameter tensor (tied names share one tensor).
  struct Substitute {
    const NodeBase* original;
    Tensor<T> tensor;
    std::string name;  // the name it was given under
  };
  std::vector<Substitute> substitutes;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const auto place = std::find_if(places.begin(), places.end(), [&](const auto& p) { return p.name == names[k]; });
    if (place == places.end()) {
      std::vector<std::string> known;
      for (const auto& p : places) known.push_back(p.name);
      throw ValueError("functional_call: " + module.type_name() + " has no parameter '" + names[k] +
                       "'; its parameters are " + quoted_list(known));
    }
    require_defined(tensors[k], "functional_call", "the tensor for '" + names[k] + "'");
    const Tensor<T>& original = parameter_at(*place);
    if (tensors[k].shape() != original.shape()) {
      throw ShapeError("functional_call: the tensor for parameter '" + names[k] + "' has shape " +
                       format_shape(tensors[k].shape()) + " but the parameter is " + format_shape(original.shape()));
    }
    const auto same = std::find_if(substitutes.begin(), substitutes.end(),
                                   [&](const auto& s) { return s.original == original.node().get(); });
    if (same == substitutes.end()) {
      substitutes.push_back({original.node().get(), tensors[k], names[k]});
    } else if (!same->tensor.same_node(tensors[k])) {
      throw ValueError("functional_call: '" + same->name + "' and '" + names[k] + "' name one tied parameter and are "
                       "given two different tensors; give one of the names, or the same tensor for both");
    }
  }

  // Every place of a substituted tensor takes its substitute. All refusals come before the first
  // swap, so a refused call leaves the module as it was.
  std::vector<std::pair<const Place<T>*, const Tensor<T>*>> swaps;
  for (const auto& place : places) {
    const auto s = std::find_if(substitutes.begin(), substitutes.end(),
                                [&](const auto& sub) { return sub.original == parameter_at(place).node().get(); });
    if (s == substitutes.end()) continue;
    const bool seen = std::any_of(swaps.begin(), swaps.end(), [&](const auto& w) {
      return w.first->owner == place.owner && w.first->index == place.index;  // a module registered twice
    });
    if (seen) continue;
    if (place.owner->parameter_slots_[place.index] == nullptr) {
      throw ValueError("functional_call: parameter '" + place.name + "' of " + place.owner->type_name() +
                       " was registered without a slot (register_parameter(name, value)), so no other tensor can "
                       "stand in for it; register it with register_parameter(name, slot, value)");
    }
    swaps.emplace_back(&place, &s->tensor);
  }
  for (const auto& [place, substitute] : swaps) {
    swapped_.push_back({place->owner, place->index, parameter_at(*place)});
    *place->owner->parameter_slots_[place->index] = *substitute;
    place->owner->parameters_[place->index].second = *substitute;
  }
}

template <class T>
ParameterSubstitution<T>::~ParameterSubstitution() {
  for (auto s = swapped_.rbegin(); s != swapped_.rend(); ++s) {
    *s->owner->parameter_slots_[s->index] = s->original;
    s->owner->parameters_[s->index].second = s->original;
  }
}

template class ParameterSubstitution<float>;
template class ParameterSubstitution<double>;

}  // namespace tapegrad::nn
