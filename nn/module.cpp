#include "nn/module.h"

#include <algorithm>
#include <unordered_map>

#include "autograd/base/callback_ids.h"
#include "nn/hook_point.h"

namespace tapegrad::nn {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::string with_thousands(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Every name of one shared tensor must carry the same value in `state` (NaN equal to NaN): the
// tensor holds one value, and keeping either silently would load something the file does not say.
template <class T>
void check_shared_values(const std::vector<std::pair<std::string, Tensor<T>>>& params, const StateDict<T>& state,
                         const std::string& module) {
  std::unordered_map<const Node<T>*, typename StateDict<T>::const_iterator> first;
  const auto same = [](T a, T b) { return a == b || (a != a && b != b); };
  for (const auto& [name, tensor] : params) {
    const auto it = state.find(name);
    if (it == state.end()) continue;
    const auto [seen, inserted] = first.emplace(tensor.node().get(), it);
    const xt::xarray<T>& a = seen->second->second;
    if (!inserted && !std::equal(a.begin(), a.end(), it->second.begin(), same)) {
      throw ValueError("load_state_dict into " + module + ": '" + seen->second->first + "' and '" + name +
                       "' are one shared (tied) parameter but hold different values in the state dict");
    }
  }
}

}  // namespace

template <class T>
void Module<T>::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw ValueError(type_name() + ": parameter or module name '" + name + "' must be non-empty and contain no '.'");
  }
  const auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& entry) { return entry.first == name; });
  };
  if (taken(parameters_) || taken(children_) || taken(hook_points_)) {
    throw ValueError(type_name() + ": name '" + name + "' is registered twice");
  }
}

template <class T>
Tensor<T> Module<T>::register_parameter(const std::string& name, Tensor<T> value) {
  check_new_name(name);
  value.set_requires_grad(true);
  if (value.name().empty()) value.set_name(name);  // a tied tensor keeps its first name in messages
  parameters_.emplace_back(name, value);
  parameter_slots_.push_back(nullptr);
  return value;
}

template <class T>
void Module<T>::register_parameter(const std::string& name, Tensor<T>& slot, Tensor<T> value) {
  slot = register_parameter(name, std::move(value));
  parameter_slots_.back() = &slot;
}

template <class T>
void Module<T>::add_child(const std::string& name, std::shared_ptr<Module> child) {
  if (!child) throw ValueError(type_name() + ": child module '" + name + "' is null");
  check_new_name(name);
  std::unordered_set<const Module*> visited;
  if (child->contains(this, visited)) {
    throw ValueError(type_name() + ": module '" + name + "' (" + child->type_name() + ") " +
                     (child.get() == this ? "is this " + type_name() + " itself" : "contains this " + type_name()) +
                     "; a module cannot be its own descendant (its tree of parameters would be infinite)");
  }
  // A parameter's tensor name grows into its dotted path as its module is registered into
  // parents, so messages (in-place edits, anomaly reports) name it as state_dict does. Its
  // current name is the end of its path within the child (children added to a container after
  // the container was registered are one step behind). A tensor named otherwise (a tied
  // module's second place, a user's own name) keeps its name.
  for (auto& [path, tensor] : child->named_parameters()) {
    const std::string& current = tensor.name();
    if (path == current || (path.size() > current.size() && path.ends_with("." + current))) {
      tensor.set_name(name + "." + path);
    }
  }
  children_.emplace_back(name, std::move(child));
}

template <class T>
bool Module<T>::contains(const Module* target, std::unordered_set<const Module*>& visited) const {
  if (this == target) return true;
  if (!visited.insert(this).second) return false;  // a shared sub-tree is walked once
  return std::any_of(children_.begin(), children_.end(),
                     [&](const auto& entry) { return entry.second->contains(target, visited); });
}

template <class T>
void Module<T>::register_generator(const std::string& name, Generator* generator) {
  generators_.emplace_back(name, generator);
}

template <class T>
struct Module<T>::Seen {
  std::unordered_set<const Module*> modules;
  std::unordered_set<const Node<T>*> tensors;
};

// Depth first; with `seen`, a module or tensor met again (shared) adds nothing: it was listed
// under its first name already (PyTorch's memo in named_modules / named_parameters).
template <class T>
void Module<T>::collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Tensor<T>>>& out,
                                   Seen* seen) const {
  if (seen != nullptr && !seen->modules.insert(this).second) return;
  for (const auto& [name, tensor] : parameters_) {
    if (seen == nullptr || seen->tensors.insert(tensor.node().get()).second) out.emplace_back(prefix + name, tensor);
  }
  for (const auto& [name, child] : children_) child->collect_parameters(prefix + name + ".", out, seen);
}

template <class T>
std::vector<std::pair<std::string, Tensor<T>>> Module<T>::named_parameters(bool remove_duplicate) const {
  std::vector<std::pair<std::string, Tensor<T>>> out;
  Seen seen;
  collect_parameters("", out, remove_duplicate ? &seen : nullptr);
  return out;
}

template <class T>
std::vector<Tensor<T>> Module<T>::parameters() const {
  std::vector<Tensor<T>> out;
  for (auto& [name, tensor] : named_parameters()) out.push_back(tensor);
  return out;
}

template <class T>
void Module<T>::collect_generators(const std::string& prefix, std::vector<std::pair<std::string, Generator*>>& out) {
  for (const auto& [name, gen] : generators_) out.emplace_back(prefix + name, gen);
  for (const auto& [name, child] : children_) child->collect_generators(prefix + name + ".", out);
}

template <class T>
std::vector<std::pair<std::string, Generator*>> Module<T>::named_generators() {
  std::vector<std::pair<std::string, Generator*>> out;
  collect_generators("", out);
  return out;
}

template <class T>
std::size_t Module<T>::num_parameters() const {
  std::size_t n = 0;
  for (const auto& [name, tensor] : named_parameters()) n += tensor.numel();
  return n;
}

template <class T>
void Module<T>::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

template <class T>
void Module<T>::zero_grad() {
  for (auto& [name, tensor] : named_parameters()) tensor.zero_grad();
}

template <class T>
StateDict<T> Module<T>::state_dict() const {
  StateDict<T> state;
  for (const auto& [name, tensor] : named_parameters(false)) state.emplace(name, tensor.value());
  return state;
}

template <class T>
LoadResult Module<T>::load_state_dict(const StateDict<T>& state, bool strict) {
  LoadResult result;
  const auto params = named_parameters(false);
  for (const auto& [name, tensor] : params) {
    const auto it = state.find(name);
    if (it == state.end()) {
      result.missing_keys.push_back(name);
    } else if (!std::equal(it->second.shape().begin(), it->second.shape().end(), tensor.value().shape().begin(),
                           tensor.value().shape().end())) {
      throw ShapeError("load_state_dict: '" + name + "' has shape " + format_shape(it->second.shape()) +
                       " in the state dict but " + format_shape(tensor.value().shape()) + " in the " + type_name());
    }
  }
  for (const auto& entry : state) {
    const std::string& name = entry.first;  // not a structured binding: clang 14 cannot capture one
    const bool known = std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == name; });
    if (!known) result.unexpected_keys.push_back(name);
  }
  if (strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty())) {
    throw ValueError("load_state_dict into " + type_name() + ": missing keys [" + join(result.missing_keys) +
                     "], unexpected keys [" + join(result.unexpected_keys) + "]");
  }
  check_shared_values(params, state, type_name());
  // Checked everything first, so a failed load changes nothing.
  for (auto [name, tensor] : params) {
    const auto it = state.find(name);
    if (it != state.end()) tensor.mutable_value() = it->second;
  }
  return result;
}

template <class T>
void Module<T>::append_summary(const std::string& name, std::size_t depth, std::string& out) const {
  const std::string indent(2 * depth, ' ');
  out += indent + (name.empty() ? "" : name + ": ") + type_name() + " (" + with_thousands(num_parameters()) + " parameters)\n";
  for (const auto& [pname, tensor] : parameters_) {
    out += indent + "  " + pname + " " + format_shape(tensor.value().shape()) + "\n";
  }
  for (const auto& [cname, child] : children_) child->append_summary(cname, depth + 1, out);
}

template <class T>
std::string Module<T>::summary() const {
  std::string out;
  append_summary("", 0, out);
  return out + "Total parameters: " + with_thousands(num_parameters()) + "\n";
}

template <class T>
std::uint64_t Module<T>::register_forward_hook(ForwardHook hook) {
  if (!hook) throw ValueError(type_name() + ": register_forward_hook was given an empty hook");
  return add_callback(forward_hooks_, std::move(hook));
}

template <class T>
std::uint64_t Module<T>::register_output_grad_hook(GradHook<T> hook) {
  if (!hook) throw ValueError(type_name() + ": register_output_grad_hook was given an empty hook");
  return add_callback(output_grad_hooks_, std::move(hook));
}

template <class T>
void Module<T>::remove_hook(std::uint64_t id) {
  if (!remove_callback(forward_hooks_, id) && !remove_callback(output_grad_hooks_, id)) {
    throw ValueError(type_name() + ": remove_hook: no hook with id " + std::to_string(id));
  }
}

template <class T>
void Module<T>::register_hook_point(const std::string& name, HookPoint<T>& point) {
  if (!name.starts_with("hook_")) {
    throw ValueError(type_name() + ": hook point name '" + name + "' must start with 'hook_'");
  }
  check_new_name(name);
  point.set_owner(type_name() + "." + name);
  hook_points_.emplace_back(name, &point);
}

template <class T>
void Module<T>::collect_modules(const std::string& path, std::vector<std::pair<std::string, Module*>>& out,
                                std::unordered_set<const Module*>& seen) {
  if (!seen.insert(this).second) return;
  out.emplace_back(path, this);
  for (auto& [name, child] : children_) child->collect_modules(path.empty() ? name : path + "." + name, out, seen);
}

template <class T>
std::vector<std::pair<std::string, Module<T>*>> Module<T>::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  std::unordered_set<const Module*> seen;
  collect_modules("", out, seen);
  return out;
}

template <class T>
Module<T>& Module<T>::get_submodule(const std::string& path) {
  Module* m = this;
  std::string walked;
  for (std::size_t begin = 0; !path.empty() && begin <= path.size();) {
    const std::size_t end = std::min(path.find('.', begin), path.size());
    const std::string step = path.substr(begin, end - begin);
    const auto it = std::find_if(m->children_.begin(), m->children_.end(), [&](const auto& c) { return c.first == step; });
    if (it == m->children_.end()) {
      std::vector<std::string> names;
      for (const auto& c : m->children_) names.push_back(c.first);
      throw ValueError(type_name() + ": get_submodule('" + path + "'): " +
                       (walked.empty() ? std::string("this module") : "'" + walked + "' (" + m->type_name() + ")") +
                       " has no child '" + step + "'; its children: " + (names.empty() ? "none" : join(names)));
    }
    m = it->second.get();
    walked += (walked.empty() ? "" : ".") + step;
    begin = end + 1;
  }
  return *m;
}

template <class T>
std::vector<std::pair<std::string, HookPoint<T>*>> Module<T>::named_hook_points() {
  std::vector<std::pair<std::string, HookPoint<T>*>> out;
  for (auto& [path, m] : named_modules()) {
    for (auto& [name, point] : m->hook_points_) out.emplace_back(path.empty() ? name : path + "." + name, point);
  }
  return out;
}

template <class T>
HookPoint<T>& Module<T>::hook_point(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  const std::string module_path = dot == std::string::npos ? "" : path.substr(0, dot);
  const std::string name = dot == std::string::npos ? path : path.substr(dot + 1);
  Module& m = get_submodule(module_path);
  for (auto& [point_name, point] : m.hook_points_) {
    if (point_name == name) return *point;
  }
  std::vector<std::string> names;
  for (const auto& p : m.hook_points_) names.push_back(p.first);
  throw ValueError(type_name() + ": hook_point('" + path + "'): " + m.type_name() +
                   (module_path.empty() ? "" : " at '" + module_path + "'") + " has no hook point '" + name +
                   "'; its points: " + (names.empty() ? "none" : join(names)));
}

template <class T>
Tensor<T> Module<T>::apply_hooks(std::span<const Tensor<T>> inputs, Tensor<T> output) {
  // Copies, so a hook that registers or removes hooks does not invalidate the loop.
  const auto forward_hooks = forward_hooks_;
  const auto output_grad_hooks = output_grad_hooks_;
  for (std::size_t i = 0; i < forward_hooks.size(); ++i) {
    std::optional<Tensor<T>> replaced = forward_hooks[i].second(inputs, output);
    if (replaced) {
      output = checked_replacement(type_name() + ": forward hook " + std::to_string(i + 1), "output", output,
                                   std::move(*replaced));
    }
  }
  return with_gradient_hooks(output, output_grad_hooks);
}

template class Module<float>;
template class Module<double>;

}  // namespace tapegrad::nn
