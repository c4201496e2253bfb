// Rows of docs/bad-inputs.md, section "trust: shared (tied) parameters and modules that contain
// themselves": a module registered inside itself (once a stack overflow at the first walk of the
// tree, so those rows run in a death-test child), one tensor given to an optimiser twice (once
// updated twice per step) and a state dict whose names of one tied tensor disagree (once loaded
// whichever came last).
#include <memory>

#include "nn/containers.h"
#include "nn/linear.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

using namespace tapegrad::nn;

// A user-defined module that registers the children it is given.
struct Holder : Module<double> {
  std::string type_name() const override { return "Holder"; }
  void hold(const std::string& name, std::shared_ptr<Module<double>> child) { register_module(name, child); }
};

// Registers `child` in `parent` as the container does, then walks the tree as the optimiser
// constructor would: without the check at registration the walk recursed until the stack ran out.
template <class Parent, class Child>
void register_then_walk(const std::shared_ptr<Parent>& parent, const std::shared_ptr<Child>& child) {
  parent->push_back(child);
  (void)parent->named_parameters();
}

// A Linear(3, 2) registered twice in a Sequential, whose state dict holds `bias_1` under "1.bias".
void load_tied_with_second_bias(const xt::xarray<double>& bias_1) {
  Sequential<double> seq;
  auto linear = std::make_shared<Linear<double>>(3, 2, gen());
  seq.push_back(linear);
  seq.push_back(linear);
  auto state = seq.state_dict();
  state["1.bias"] = bias_1;
  seq.load_state_dict(state);
}

BAD_INPUT_CRASH_ROW(Sharing, sequential_push_back_itself, ValueError, ([] {
                      auto seq = std::make_shared<Sequential<double>>();
                      register_then_walk(seq, seq);
                    }()),
                    "Sequential", "module '0' (Sequential) is this Sequential itself", "own descendant")
BAD_INPUT_CRASH_ROW(Sharing, sequential_push_back_its_parent, ValueError, ([] {
                      auto outer = std::make_shared<Sequential<double>>();
                      auto inner = std::make_shared<Sequential<double>>();
                      outer->push_back(inner);
                      register_then_walk(inner, outer);
                    }()),
                    "Sequential", "module '0' (Sequential) contains this Sequential", "own descendant")
BAD_INPUT_CRASH_ROW(Sharing, module_list_push_back_its_grandparent, ValueError, ([] {
                      auto top = std::make_shared<Holder>();
                      auto middle = std::make_shared<Holder>();
                      auto list = std::make_shared<ModuleList<double>>();
                      top->hold("middle", middle);
                      middle->hold("list", list);
                      register_then_walk(list, top);
                    }()),
                    "ModuleList", "module '0' (Holder) contains this ModuleList", "own descendant")
BAD_INPUT_CRASH_ROW(Sharing, register_module_itself, ValueError, ([] {
                      auto holder = std::make_shared<Holder>();
                      holder->hold("self", holder);
                      (void)holder->num_parameters();
                    }()),
                    "Holder", "module 'self' (Holder) is this Holder itself", "own descendant")
BAD_INPUT_ROW(Sharing, optimizer_one_tensor_under_two_names, ValueError,
              ([] {
                const auto w = leaf({2, 3});
                optim::Adam<double>({{"embed.weight", w}, {"generator.weight", w}});
              }()),
              "Adam", "'embed.weight' (group 0) and 'generator.weight' (group 0) are one shared tensor")
BAD_INPUT_ROW(Sharing, optimizer_one_tensor_in_two_groups, ValueError,
              ([] {
                const auto w = leaf({2, 3});
                using Groups = std::vector<optim::ParamGroup<double>>;
                optim::SGD<double>(Groups{{{{"a", w}}, 0.1, 0.0}, {{{"b", w}}, 0.2, 0.0}});
              }()),
              "SGD", "'a' (group 0) and 'b' (group 1) are one shared tensor")
BAD_INPUT_ROW(Sharing, load_state_dict_tied_names_disagree, ValueError, (load_tied_with_second_bias({5.0, 5.0})),
              "load_state_dict into Sequential", "'0.bias' and '1.bias' are one shared (tied) parameter",
              "different values")

}  // namespace
}  // namespace tapegrad::bad_inputs
