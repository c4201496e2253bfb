#pragma once
// Optimizer: the base of every optimiser. It updates named parameters organised in parameter
// groups (each with its own lr and weight_decay, as PyTorch's param_groups), keeps per-parameter
// state buffers by name (inspectable, and saved by checkpoints), and never records on a tape.
// A parameter without a gradient is left untouched, and its state is not created or advanced.
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad::optim {

template <class T> using NamedParameters = std::vector<std::pair<std::string, Tensor<T>>>;
template <class T> using StateMap = std::map<std::string, xt::xarray<T>>;

template <class T>
struct ParamGroup {
  NamedParameters<T> params;
  double lr;
  double weight_decay;
};

template <class T>
class Optimizer {
 public:
  explicit Optimizer(std::vector<ParamGroup<T>> groups);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient.
  void step();
  // Drops every parameter's gradient.
  void zero_grad();

  std::vector<ParamGroup<T>>& param_groups() { return groups_; }
  const std::vector<ParamGroup<T>>& param_groups() const { return groups_; }

  // State buffers keyed "<parameter name>.<buffer>" (e.g. "fc1.weight.exp_avg") plus
  // "<parameter name>.step" as a 0-d array; load_state takes what state() gave (ValueError naming
  // an unknown key, ShapeError naming a mis-shaped one).
  StateMap<T> state() const;
  void load_state(const StateMap<T>& state);

 protected:
  // Updates one parameter given its gradient; step counts this parameter's updates from 1;
  // `buffers` holds its state (empty on its first update).
  virtual void update(const ParamGroup<T>& group, Tensor<T>& param, const xt::xarray<T>& grad, std::size_t step,
                      StateMap<T>& buffers) = 0;

 private:
  struct ParamState {
    std::size_t step = 0;
    StateMap<T> buffers;
  };
  std::vector<ParamGroup<T>> groups_;
  std::map<std::string, ParamState> state_;
};

}  // namespace tapegrad::optim
