#include "call.h"

#include "autograd/base/checks.h"

namespace tapegrad::pytorch_samples {
namespace {

void name_all(const Value& v, const std::string& name, std::map<const Value*, std::string>& names,
              std::map<int, std::string>& leaf_names) {
  names[&v] = name;
  if (v.kind == Value::Kind::tensor && v.tensor->is_float()) leaf_names.emplace(v.tensor->leaf, name);
  for (std::size_t i = 0; i < v.list.size(); ++i) name_all(v.list[i], name + "[" + std::to_string(i) + "]", names, leaf_names);
}

}  // namespace

std::string describe(const Value& v) {
  switch (v.kind) {
    case Value::Kind::tensor: return v.tensor->dtype + " tensor " + format_shape(v.tensor->shape);
    case Value::Kind::list: {
      std::string s;
      for (const Value& item : v.list) {
        if (!s.empty()) s += ",";
        s += describe(item);
      }
      return "[" + s + "]";
    }
    case Value::Kind::number: return format_number(v.number);
    case Value::Kind::integer: return std::to_string(v.integer);
    case Value::Kind::boolean: return v.boolean ? "True" : "False";
    case Value::Kind::text: return "'" + v.text + "'";
    case Value::Kind::dtype: return v.text;
    case Value::Kind::none: return "None";
  }
  return "?";
}

Call::Call(const Sample& sample)
    : sample_(sample), used_args_(sample.args.size()), used_kwargs_(sample.kwargs.size()) {
  name_all(sample.input, "input", names_, leaf_names_);
  for (std::size_t i = 0; i < sample.args.size(); ++i) name_all(sample.args[i], "args[" + std::to_string(i) + "]", names_, leaf_names_);
  for (const auto& [name, v] : sample.kwargs) name_all(v, "kwargs." + name, names_, leaf_names_);
}

const Value& Call::arg(std::size_t i) {
  if (!has_arg(i)) throw std::logic_error(sample_.id + ": the row reads args[" + std::to_string(i) + "], which it lacks");
  used_args_[i] = true;
  return sample_.args[i];
}

const Value* Call::kwarg(const std::string& name) {
  for (std::size_t i = 0; i < sample_.kwargs.size(); ++i) {
    if (sample_.kwargs[i].first == name) {
      used_kwargs_[i] = true;
      return &sample_.kwargs[i].second;
    }
  }
  return nullptr;
}

namespace {
[[noreturn]] void wrong_kind(const std::map<const Value*, std::string>& names, const Value& v, const char* wanted) {
  auto it = names.find(&v);
  throw Unsupported((it == names.end() ? std::string("a value") : it->second) + " is " + describe(v) +
                    " where tapegrad takes " + wanted);
}
}  // namespace

Tensor<double> Call::tensor(const Value& v) {
  if (v.kind != Value::Kind::tensor || !v.tensor->is_float()) wrong_kind(names_, v, "a float64 tensor");
  auto [it, made] = leaves_.try_emplace(v.tensor->leaf);
  if (made) it->second = Tensor<double>(v.tensor->values, v.tensor->requires_grad);
  return it->second;
}

std::vector<Tensor<double>> Call::tensors(const Value& v) {
  if (v.kind != Value::Kind::list) wrong_kind(names_, v, "a list of tensors");
  std::vector<Tensor<double>> out;
  for (const Value& item : v.list) out.push_back(tensor(item));
  return out;
}

IndexArray Call::indices(const Value& v) const {
  if (v.kind != Value::Kind::tensor || v.tensor->dtype != "int64") wrong_kind(names_, v, "an int64 index tensor");
  return v.tensor->integers;
}

Mask Call::mask(const Value& v) const {
  if (v.kind != Value::Kind::tensor || v.tensor->dtype != "bool") wrong_kind(names_, v, "a bool mask");
  return xt::cast<bool>(v.tensor->integers);
}

double Call::number(const Value& v) const {
  if (v.kind == Value::Kind::number) return v.number;
  if (v.kind == Value::Kind::integer) return double(v.integer);
  wrong_kind(names_, v, "a number");
}

Index Call::integer(const Value& v) const {
  if (v.kind == Value::Kind::integer) return v.integer;
  if (v.kind == Value::Kind::tensor && v.tensor->dtype == "int64" && v.tensor->shape.empty()) return v.tensor->integers();
  wrong_kind(names_, v, "an int");
}

std::vector<Index> Call::integers(const Value& v) const {
  if (v.kind == Value::Kind::integer) return {v.integer};
  if (v.kind != Value::Kind::list) wrong_kind(names_, v, "a list of ints");
  std::vector<Index> out;
  for (const Value& item : v.list) out.push_back(integer(item));
  return out;
}

bool Call::boolean(const Value& v) const {
  if (v.kind != Value::Kind::boolean) wrong_kind(names_, v, "a bool");
  return v.boolean;
}

const std::string& Call::text(const Value& v) const {
  if (v.kind != Value::Kind::text) wrong_kind(names_, v, "a string");
  return v.text;
}

void Call::require_all_used() const {
  for (std::size_t i = 0; i < used_args_.size(); ++i) {
    if (!used_args_[i]) throw Unsupported("needs args[" + std::to_string(i) + "] = " + describe(sample_.args[i]) + ", which tapegrad lacks");
  }
  for (std::size_t i = 0; i < used_kwargs_.size(); ++i) {
    if (!used_kwargs_[i]) {
      throw Unsupported("needs " + sample_.kwargs[i].first + "=" + describe(sample_.kwargs[i].second) + ", which tapegrad lacks");
    }
  }
}

}  // namespace tapegrad::pytorch_samples
