#pragma once
// The backward walk running on this thread, as leaves with gradient hooks see it: their hooks
// run once on the walk's total gradient (as PyTorch's leaf hooks do), so a hooked leaf keeps its
// contributions apart and hands itself to the walk, which finishes it when it ends.
#include <algorithm>
#include <memory>
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

// Marks a walk on this thread for its lifetime (walks nest: a hook may run a backward of its own).
// finish() runs the deferred leaves' hooks; a scope left without finish() (the walk threw)
// drops their contributions.
class WalkScope {
 public:
  // capture: null for backward; gradient()'s leaf sources, which alone receive gradients.
  explicit WalkScope(const std::vector<const NodeBase*>* capture);
  ~WalkScope();
  WalkScope(const WalkScope&) = delete;
  WalkScope& operator=(const WalkScope&) = delete;
  void finish();

 private:
  friend void defer_to_walk_end(std::shared_ptr<NodeBase> leaf);
  friend LeafGradient leaf_gradient(const NodeBase& leaf, bool has_hooks);
  const std::vector<const NodeBase*>* capture_;
  std::vector<std::shared_ptr<NodeBase>> deferred_;
  std::size_t finished_ = 0;
  WalkScope* previous_;
};

}  // namespace tapegrad::detail
