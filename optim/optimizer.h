#pragma once
// Optimizer: the base of every optimiser. It updates named parameters organised in parameter
// groups (each with its own lr and weight_decay, as PyTorch's param_groups), keeps per-parameter
// state buffers by name (inspectable, and saved by checkpoints), and never records on a tape.
// A parameter without a gradient is left untouched, and its state is not created or advanced.
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/core/tensor.h"

namespace tapegrad::optim {

template <class T> using NamedParameters = std::vector<std::pair<std::string, Tensor<T>>>;
template <class T> using StateMap = std::map<std::string, xt::xarray<T>>;

// The parameters are const: once an optimiser holds a group, param_groups() lets a schedule change
// lr and weight_decay but not which tensors are updated (add_param_group adds them, checked).
template <class T>
struct ParamGroup {
  const NamedParameters<T> params;
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
  // checked again first (a schedule or the caller may have changed them), and each updated
  // parameter's gradient and state buffers against its shape (ShapeError naming the parameter when
  // its value was given another shape): nothing is updated unless every check passes.
  void step();
  // Drops every parameter's gradient.
  void zero_grad();

  // The groups, in order; each one's lr and weight_decay may be changed, its parameters not.
  std::span<ParamGroup<T>> param_groups() { return groups_; }
  std::span<const ParamGroup<T>> param_groups() const { return groups_; }
  // Appends a group (PyTorch's add_param_group) under the constructor's rules, against the
  // parameters already held: the same errors, and nothing is added when one is thrown.
  void add_param_group(ParamGroup<T> group);

  // State buffers keyed "<parameter name>.<buffer>" (e.g. "fc1.weight.exp_avg") plus
  // "<parameter name>.step" as a 0-d array, for every parameter updated so far. load_state
  // replaces the whole state with what state() gave, of an optimiser of the same kind and options
  // over parameters of the same names and shapes (a parameter the state does not name starts
  // afresh). Each parameter it names needs a step, a whole number >= 1, and exactly the buffers
  // this optimiser keeps (buffer_names(): Adam's moments are not SGD's momentum; Adam and AdamW
  // keep the same ones and take each other's state, as in PyTorch), each shaped like the parameter. ValueError or ShapeError naming the optimiser, the key or the parameter, and
  // what was expected; a rejected state leaves the optimiser's state as it was. The element type
  // is the map's (load_checkpoint refuses optimiser tensors stored with another dtype).
  StateMap<T> state() const;
  void load_state(const StateMap<T>& state);

 protected:
  // Updates one parameter given its gradient; step counts this parameter's updates from 1;
  // `buffers` holds its state (empty on its first update).
  virtual void update(const ParamGroup<T>& group, Tensor<T>& param, const xt::xarray<T>& grad, std::size_t step,
                      StateMap<T>& buffers) = 0;
  // The buffers update() leaves in every parameter's state from its first update on.
  virtual std::vector<std::string> buffer_names() const = 0;

 private:
  struct ParamState {
    std::size_t step = 0;
    StateMap<T> buffers;
  };
  void check_group(const ParamGroup<T>& group, std::size_t i) const;
  void check_groups(const std::vector<ParamGroup<T>>& groups) const;
  void check_shapes_before_step() const;
  std::map<std::string, ParamState> parse_state(const StateMap<T>& state) const;
  void check_buffer_names(const std::string& param, const ParamState& s) const;

  std::vector<ParamGroup<T>> groups_;
  std::string name_;
  std::map<std::string, ParamState> state_;
};

}  // namespace tapegrad::optim
