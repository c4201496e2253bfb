#pragma once
// Module: the base of every nn component. It owns named parameters and named child modules, and
// from those alone derives everything else: PyTorch's dotted names
// ("encoder.layers.0.self_attn.query.linear.weight"), parameters() for the optimiser,
// zero_grad(), train()/eval(), state_dict()/load_state_dict() and the printed summary.
//
// Modules are not copyable (parameters are shared handles; a copy would silently alias them):
// hold children as std::shared_ptr, created with register_module(). Every module is a template
// over T (float to train, double to gradient-check), instantiated for both in its .cpp.
//
// Constructor convention: PyTorch's required arguments, then the Generator that initialises the
// parameters, then PyTorch's defaulted arguments with PyTorch's defaults, e.g.
//   Linear<float> proj(512, 2048, gen, /*bias=*/true);
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/generator.h"
#include "autograd/tensor.h"

namespace tapegrad::nn {

template <class T> using StateDict = std::map<std::string, xt::xarray<T>>;

// What a non-strict load_state_dict did not match (a strict load throws instead).
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

template <class T>
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The class name shown by summary(), e.g. "Linear".
  virtual std::string type_name() const = 0;

  // This module's and every descendant's parameters, depth first in registration order.
  std::vector<std::pair<std::string, Tensor<T>>> named_parameters() const;
  std::vector<Tensor<T>> parameters() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  // Every generator a module draws from while running (dropout streams), by dotted name; a
  // checkpoint saves their states so a resumed run draws the same numbers.
  std::vector<std::pair<std::string, Generator*>> named_generators();
  std::size_t num_parameters() const;

  // Training mode reaches every descendant (dropout is active only in training).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();

  // Copies of every parameter's value by dotted name.
  StateDict<T> state_dict() const;
  // Copies values in by dotted name. A key with the wrong shape always throws ShapeError naming
  // the key and both shapes. strict: missing or unexpected keys throw ValueError listing all of
  // them; otherwise they are returned.
  LoadResult load_state_dict(const StateDict<T>& state, bool strict = true);

  // The module tree: one line per module with its type and parameter count, one per parameter
  // with its shape, and the total.
  std::string summary() const;

 protected:
  // Registers a parameter (marked requires_grad and named) and returns the handle to keep.
  Tensor<T> register_parameter(const std::string& name, Tensor<T> value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    add_child(name, child);
    return child;
  }
  void register_generator(const std::string& name, Generator* generator);

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name) const;
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Tensor<T>>>& out) const;
  void collect_generators(const std::string& prefix, std::vector<std::pair<std::string, Generator*>>& out);
  void append_summary(const std::string& name, std::size_t depth, std::string& out) const;

  std::vector<std::pair<std::string, Tensor<T>>> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, Generator*>> generators_;
  bool training_ = true;
};

extern template class Module<float>;
extern template class Module<double>;

}  // namespace tapegrad::nn
