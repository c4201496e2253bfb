#pragma once
// Sequential and ModuleList; children are named "0", "1", ... as in PyTorch, so parameter names
// read "layers.0.linear.weight".
#include <memory>
#include <vector>

#include "nn/unary_module.h"

namespace tapegrad::nn {

// Applies its children in order.
template <class T>
class Sequential : public UnaryModule<T> {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<UnaryModule<T>>> modules) {
    for (auto& m : modules) push_back(std::move(m));
  }
  void push_back(std::shared_ptr<UnaryModule<T>> module) {
    modules_.push_back(this->register_module(std::to_string(modules_.size()), std::move(module)));
  }
  std::string type_name() const override { return "Sequential"; }
  Tensor<T> forward(const Tensor<T>& x) override {
    Tensor<T> y = x;
    for (const auto& m : modules_) y = (*m)(y);  // through operator(), so each child's hooks run
    return y;
  }
  std::size_t size() const { return modules_.size(); }

 private:
  std::vector<std::shared_ptr<UnaryModule<T>>> modules_;
};

// A list of modules of one type M, registered as children, with typed access.
template <class T, class M = Module<T>>
class ModuleList : public Module<T> {
 public:
  void push_back(std::shared_ptr<M> module) {
    modules_.push_back(this->register_module(std::to_string(modules_.size()), std::move(module)));
  }
  std::string type_name() const override { return "ModuleList"; }
  std::size_t size() const { return modules_.size(); }
  M& operator[](std::size_t i) const {
    if (i >= modules_.size()) {
      throw ValueError("ModuleList: index " + std::to_string(i) + " is out of range for " +
                       std::to_string(modules_.size()) + " modules");
    }
    return *modules_[i];
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<M>> modules_;
};

}  // namespace tapegrad::nn
