#pragma once
// The backward walk running on this thread, as leaves with gradient hooks see it: their hooks
// run once on the walk's total gradient (as PyTorch's leaf hooks do), so a hooked leaf keeps its
// contributions apart and hands itself to the walk, which finishes it (runs its hooks and adds
// the total to grad()) as soon as that total is final: right after the walk has passed the
// oldest entry that reads the leaf, since only entries that list a tensor among their inputs
// add into its gradient. A data-parallel reducer's hooks thus start communicating while the rest
// of the walk goes on (distributed/allreducer.h).
#include <algorithm>
#include <cstddef>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autograd/tape.h"
#include "autograd/tensor.h"

namespace tapegrad::detail {

bool backward_walk_running();
// Must be called only while backward_walk_running(); `leaf` is finished once its gradient is final.
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
// The walk reports each entry it has passed (passed); that finishes the deferred leaves whose
// gradient is now final. finish() finishes the rest; a scope left without finish() (the walk
// threw) drops their contributions.
class WalkScope {
 public:
  // capture: null for backward; gradient()'s leaf sources, which alone receive gradients.
  // create_graph: gradients are recorded tensors (gradient() only, so capture is not null).
  WalkScope(const std::vector<const NodeBase*>* capture, bool create_graph);
  ~WalkScope();
  WalkScope(const WalkScope&) = delete;
  WalkScope& operator=(const WalkScope&) = delete;
  // The walk goes over `entries` (a tape's, oldest first) from the newest down.
  void walk_over(const std::vector<std::shared_ptr<const GradientTape::Entry>>& entries) { entries_ = &entries; }
  // The walk has run (or skipped) entry `index`: no older entry adds into a leaf that only
  // entries at `index` or newer read, so those leaves are finished now.
  void passed(std::size_t index);
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
  // A deferred leaf and the index of the oldest entry reading it (0 when unknown: the walk's end).
  struct Deferred {
    std::shared_ptr<NodeBase> leaf;
    std::size_t final_after;
  };
  static bool finishes_later(const Deferred& a, const Deferred& b) { return a.final_after < b.final_after; }
  // Where a leaf's gradient becomes final, from a scan of the entries made at the first deferral
  // (walks without hooks pay nothing).
  std::size_t final_after(const NodeBase& leaf);
  // Runs the leaf's hooks outside this walk: what they accumulate is not deferred again.
  void finish_leaf(NodeBase& leaf);

  std::unordered_map<const NodeBase*, HeldGradient> graph_gradients_;
  const std::vector<std::shared_ptr<const GradientTape::Entry>>* entries_ = nullptr;
  std::unordered_map<const NodeBase*, std::size_t> oldest_reader_;
  bool scanned_ = false;
  std::vector<Deferred> deferred_;  // a heap, the largest final_after on top
  // Leaves finished before the walk's end: another contribution would be a bug in some op.
  std::unordered_set<const NodeBase*> finished_early_;
  WalkScope* previous_;
};

}  // namespace tapegrad::detail
