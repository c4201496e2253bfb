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
// Sharing (weight tying) is PyTorch's: one tensor registered under several names (a module
// registered in two places, or a module registering another's weight as its own) is ONE parameter
// for named_parameters(), parameters(), num_parameters(), zero_grad() and so for optimisers, and
// keeps every name in state_dict() (a load writes each name into the one tensor, so it stays
// shared). A module may not contain itself, directly or through a descendant: registration throws.
//
// Constructor convention: PyTorch's required arguments, then the Generator that initialises the
// parameters, then PyTorch's defaulted arguments with PyTorch's defaults, e.g.
//   Linear<float> proj(512, 2048, gen, /*bias=*/true);
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
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

  // This module's and every descendant's parameters by dotted name, depth first in registration
  // order. A shared tensor is listed once, under its first name (what optimisers must be given);
  // remove_duplicate = false lists it under every name (PyTorch's flag; what state_dict() holds).
  std::vector<std::pair<std::string, Tensor<T>>> named_parameters(bool remove_duplicate = true) const;
  // The tensors of named_parameters(): each shared tensor once.
  std::vector<Tensor<T>> parameters() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  // Every generator a module draws from while running (dropout streams), by dotted name; a
  // checkpoint saves their states so a resumed run draws the same numbers.
  std::vector<std::pair<std::string, Generator*>> named_generators();
  // Elements of the distinct parameters (a shared tensor counts once).
  std::size_t num_parameters() const;

  // Training mode reaches every descendant (dropout is active only in training).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();

  // Copies of every parameter's value by dotted name, a shared tensor under each of its names.
  StateDict<T> state_dict() const;
  // Copies values in by dotted name. A key with the wrong shape always throws ShapeError naming
  // the key and both shapes; two names of one shared tensor with different values throw
  // ValueError naming both (the tensor cannot hold both). strict: missing or unexpected keys
  // throw ValueError listing all of them; otherwise they are returned.
  LoadResult load_state_dict(const StateDict<T>& state, bool strict = true);

  // The module tree: one line per module with its type and parameter count, one per parameter
  // with its shape, and the total.
  std::string summary() const;

 protected:
  // Registers a parameter (marked requires_grad, and named unless it already has a name) and
  // returns the handle to keep. Registering a tensor that is already another module's parameter
  // ties the two: they are one parameter from then on.
  Tensor<T> register_parameter(const std::string& name, Tensor<T> value);
  // ValueError when `child` is this module or contains it (the tree would be infinite).
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    add_child(name, child);
    return child;
  }
  void register_generator(const std::string& name, Generator* generator);

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name) const;
  struct Seen;  // what named_parameters(true) has listed already
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Tensor<T>>>& out,
                          Seen* seen) const;
  bool contains(const Module* target, std::unordered_set<const Module*>& visited) const;
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
