#pragma once
// The backward walk running on this thread, as leaves with gradient hooks see it: their hooks
// run once on the walk's total gradient (as PyTorch's leaf hooks do), so a hooked leaf keeps its
// contributions apart and hands itself to the walk, which finishes it when it ends.
#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad::detail {

bool backward_walk_running();
// Must be called only while backward_walk_running(); `leaf` is finished when the walk ends.
void defer_to_walk_end(std::shared_ptr<NodeBase> leaf);

// What a leaf does with a gradient handed to it.
enum class LeafGradient {
  accumulate,            // into grad() now
  hook_then_accumulate,  // outside a walk (backward's seed of a leaf): hooks first
  defer,                 // keep apart until the walk ends (hooks, or a source of gradient())
  drop,                  // gradient()'s walk: a leaf it was not asked about keeps its grad()
};
LeafGradient leaf_gradient(const NodeBase& leaf, bool has_hooks);

// A gradient a create_graph walk carries: its node, with a hold on the value for as long as the
// walk keeps it, since the walk adds to it and hands it on.
using HeldGradient = ValueHold<NodeBase>;

// A create_graph walk (GradientTape::gradient with create_graph) carries gradients as tensors
// that the active tapes record, so they can be differentiated again. They are kept by the walk,
// keyed by node, not in the nodes' grad(). These must be called only while such a walk runs.
bool walk_creates_graph();
// The node's gradient in the running create_graph walk (a Node<T> of the node's type), removed
// from the walk; empty when none has reached it.
HeldGradient take_walk_gradient(const NodeBase& node);
void put_walk_gradient(const NodeBase& node, HeldGradient gradient);
bool has_walk_gradient(const NodeBase& node);

// Marks a walk on this thread for its lifetime (walks nest: a hook may run a backward of its own).
// finish() runs the deferred leaves' hooks; a scope left without finish() (the walk threw)
// drops their contributions.
class WalkScope {
 public:
  // capture: null for backward; gradient()'s leaf sources, which alone receive gradients.
  // create_graph: gradients are recorded tensors (gradient() only, so capture is not null).
  WalkScope(const std::vector<const NodeBase*>* capture, bool create_graph);
  ~WalkScope();
  WalkScope(const WalkScope&) = delete;
  WalkScope& operator=(const WalkScope&) = delete;
  void finish();
  bool creates_graph() const { return create_graph_; }
  // take_walk_gradient on this scope, also after finish() (gradient() collects its sources then).
  HeldGradient take_gradient(const NodeBase& node);

 private:
  friend void defer_to_walk_end(std::shared_ptr<NodeBase> leaf);
  friend LeafGradient leaf_gradient(const NodeBase& leaf, bool has_hooks);
  friend bool walk_creates_graph();
  friend void put_walk_gradient(const NodeBase& node, HeldGradient gradient);
  friend bool has_walk_gradient(const NodeBase& node);
  const std::vector<const NodeBase*>* capture_;
  bool create_graph_;
  std::unordered_map<const NodeBase*, HeldGradient> graph_gradients_;
  std::vector<std::shared_ptr<NodeBase>> deferred_;
  std::size_t finished_ = 0;
  WalkScope* previous_;
};

}  // namespace tapegrad::detail
