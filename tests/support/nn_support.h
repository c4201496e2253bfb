#pragma once
// Test helpers for nn modules: parameter names, a parameter by name, gradcheck inputs.
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/ops/masking.h"
#include "nn/module.h"

namespace tapegrad::testing {

// Dotted parameter names in registration order.
inline std::vector<std::string> names_of(const nn::Module<double>& m) {
  std::vector<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) names.push_back(name);
  return names;
}

// The parameter of m called `name` (a shared handle: changing its value changes the module).
inline Tensor<double> parameter(const nn::Module<double>& m, const std::string& name) {
  for (const auto& [n, t] : m.named_parameters())
    if (n == name) return t;
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

// Inputs for a gradcheck of a module: the given inputs first, then every parameter.
inline std::vector<Tensor<double>> with_parameters(std::vector<Tensor<double>> inputs, const nn::Module<double>& m) {
  for (const auto& p : m.parameters()) inputs.push_back(p);
  return inputs;
}

// An attention mask of `shape` from row-major 0/1 values, 1 = may attend.
inline AttendMask mask_from(const Shape& shape, std::initializer_list<int> values) {
  Mask m = Mask::from_shape(shape);
  std::size_t e = 0;
  for (int v : values) m.data()[e++] = v != 0;
  return AttendMask(std::move(m));
}

// A naive-loop Linear over a 3-D input: x [a, b, in] -> x W^T + bias [a, b, out], with
// W = state[prefix + "weight"] and the bias state[prefix + "bias"] when present.
inline xt::xarray<double> naive_linear(const xt::xarray<double>& x, const nn::StateDict<double>& state,
                                       const std::string& prefix) {
  const xt::xarray<double>& w = state.at(prefix + "weight");
  const auto bias = state.find(prefix + "bias");
  const std::size_t n0 = x.shape()[0], n1 = x.shape()[1], in = x.shape()[2], out = w.shape()[0];
  xt::xarray<double> y = xt::zeros<double>({n0, n1, out});
  for (std::size_t a = 0; a < n0; ++a)
    for (std::size_t b = 0; b < n1; ++b)
      for (std::size_t o = 0; o < out; ++o) {
        double acc = bias == state.end() ? 0.0 : bias->second(o);
        for (std::size_t m = 0; m < in; ++m) acc += x(a, b, m) * w(o, m);
        y(a, b, o) = acc;
      }
  return y;
}

}  // namespace tapegrad::testing
