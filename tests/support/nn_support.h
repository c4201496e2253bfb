#pragma once
// Test helpers for nn modules: parameter names, a parameter by name, gradcheck inputs.
#include <string>
#include <vector>

#include <gtest/gtest.h>

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

}  // namespace tapegrad::testing
