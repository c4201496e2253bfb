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
  // ValueError (naming `name`, e.g. "Adam", the group and the value) for no parameters at all, an
  // undefined parameter, a name given twice, one tensor given twice under two names (a shared,
  // tied parameter: in one group or across groups, as PyTorch rejects), or an lr or weight_decay
  // that is negative or not finite.
  explicit Optimizer(std::vector<ParamGroup<T>> groups, std::string name = "Optimizer");
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient. Each group's lr and weight_decay are
  // checked again first (a schedule or the caller may have changed them).
  void step();
  // Drops every parameter's gradient.
  void zero_grad();

  std::vector<ParamGroup<T>>& param_groups() { return groups_; }
  const std::vector<ParamGroup<T>>& param_groups() const { return groups_; }

  // State buffers keyed "<parameter name>.<buffer>" (e.g. "fc1.weight.exp_avg") plus
  // "<parameter name>.step" as a 0-d array; load_state takes what state() gave (ValueError naming
  // an unknown key, ShapeError naming a mis-shaped one; a step must be a 0-d whole number >= 0).
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
  void check_group(std::size_t i) const;

  std::vector<ParamGroup<T>> groups_;
  std::string name_;
  std::map<std::string, ParamState> state_;
};

}  // namespace tapegrad::optim
