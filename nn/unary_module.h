#pragma once
// A module with one tensor in and one tensor out: what Sequential chains.
#include "nn/module.h"

namespace tapegrad::nn {

template <class T>
class UnaryModule : public Module<T> {
 public:
  virtual Tensor<T> forward(const Tensor<T>& x) = 0;
  Tensor<T> operator()(const Tensor<T>& x) { return forward(x); }
};

}  // namespace tapegrad::nn
