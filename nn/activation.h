#pragma once
// Stateless modules: ReLU, GELU, Softmax(dim).
#include "autograd/ops/activation.h"
#include "autograd/ops/softmax.h"
#include "nn/unary_module.h"

namespace tapegrad::nn {

template <class T>
class ReLU : public UnaryModule<T> {
 public:
  std::string type_name() const override { return "ReLU"; }
  Tensor<T> forward(const Tensor<T>& x) override { return relu(x); }
};

template <class T>
class GELU : public UnaryModule<T> {
 public:
  explicit GELU(GeluApproximation approximate = GeluApproximation::None) : approximate_(approximate) {}
  std::string type_name() const override { return "GELU"; }
  Tensor<T> forward(const Tensor<T>& x) override { return gelu(x, approximate_); }

 private:
  GeluApproximation approximate_;
};

// Softmax over axis dim (the key axis of an attention score tensor, for instance).
template <class T>
class Softmax : public UnaryModule<T> {
 public:
  explicit Softmax(Index dim) : dim_(dim) {}
  std::string type_name() const override { return "Softmax"; }
  Tensor<T> forward(const Tensor<T>& x) override { return softmax(x, dim_); }
  Index dim() const { return dim_; }

 private:
  Index dim_;
};

}  // namespace tapegrad::nn
