#pragma once
// Gradient routing: every decision about where a gradient goes during a backward walk. Node only
// stores gradients (accumulate_grad, take_grad, lend_grad); it never asks the walk. The walk
// (GradientTape::walk) reports its events here, and the ops' backward formulas hand their
// vector-Jacobian products here (record.h's accumulate).
//
// Kinds of gradient, and what each event does with them. "The walk" is one backward or gradient()
// call on one thread; walks on other threads, and walks nested in hooks, are other walks.
//
// | kind                       | arrives                      | another arrives        | walk passes the oldest entry reading it      | walk ends            | walk throws          |
// |----------------------------|------------------------------|------------------------|----------------------------------------------|----------------------|----------------------|
// | leaf, backward, no hooks   | added to grad() now          | added (node lock)      | -                                            | -                    | what was added stays |
// | leaf, backward, hooked     | kept as this walk's total    | added to that total    | hooks run once on the total (those it has then); result added to grad() | same, if not yet | total dropped, no hook |
// | leaf, gradient() source    | kept as this walk's total    | added to that total    | hooks run once; result kept for gradient()   | returned to caller   | dropped              |
// | leaf, not a gradient() source | dropped (grad() untouched) | dropped               | -                                            | -                    | -                    |
// | leaf, already finished     | TapeError: an op added into it without listing it as an input (custom op)                                         |||||
// | intermediate               | added to its node's gradient | added (node lock)      | its entry runs: hooks, then the formula; then cleared | -           | cleared by the tape (the seed too) |
// | intermediate, retained     | as intermediate              | as intermediate        | after the formula, the (hooked) gradient is kept in grad(), also by gradient() | - | what it holds stays |
// | intermediate, newer than the entry running | TapeError: its entry has already been walked, so it would be dropped (a custom op adding into a tensor it did not list) |||||
// | intermediate not on the walking tape | TapeError: the walk never reaches its entry (a custom op adding into a tensor it did not list, made under another tape) |||||
// | lent (backward's seed)     | the node points at the caller's array; the formula reads it in place; a retained output, a hook's replacement and any input taking it unchanged get copies                   ||||||
// | create_graph               | kept by the walk as a recorded tensor | recorded add   | as the kinds above, on recorded tensors      | sources returned     | dropped              |
//
// Hook events (tensor hooks, Tensor::register_hook), for every kind above that runs hooks:
// | event                          | what happens                                                                                   |
// |--------------------------------|------------------------------------------------------------------------------------------------|
// | hook runs                      | on the thread of the walk, with that walk's gradient; hooks in registration order, each seeing the previous one's result |
// | hook replaces                  | the replacement goes on (another shape: TapeError). create_graph: a tensor hook's replacement is recorded (differentiable); an array hook's replacement is a TapeError |
// | hook removes itself or another | the hooks that run on this gradient were fixed when it arrived at them; the removal counts from the next gradient on (no hook is freed while it runs) |
// | hook registered during a walk  | runs on gradients reaching its tensor after the registration                                   |
// | hook throws                    | the walk throws (see "walk throws")                                                            |
// | hook runs a backward           | on a tape the hook makes: allowed (that tape records, the walking one does not); on the walking tape, or clearing it: TapeError |
//
// tests/test_routing.cpp tests this table row by row.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autograd/core/tape.h"
#include "autograd/core/tensor.h"

namespace tapegrad::detail {

// A gradient the walk keeps (a hooked leaf's or a source's running total, or any gradient of a
// create_graph walk), with a hold on its value for as long as the walk keeps it.
using HeldGradient = ValueHold<NodeBase>;

// One backward walk on this thread, for its lifetime (walks nest: a hook may run a backward of
// its own on another tape).
class Walk {
 public:
  // sources: null for backward; gradient()'s leaf sources, which alone receive gradients.
  // create_graph: gradients are recorded tensors (gradient() only, so sources is not null).
  Walk(const std::vector<const NodeBase*>* sources, bool create_graph);
  ~Walk();  // without finish() (the walk threw): kept totals are dropped, their hooks not run
  Walk(const Walk&) = delete;
  Walk& operator=(const Walk&) = delete;

  // The walk goes over `entries` (a tape's, oldest first) from the newest down.
  void walk_over(const std::vector<std::shared_ptr<const GradientTape::Entry>>& entries) { entries_ = &entries; }
  // Entry `index`, whose output has producer id `entry_id`, is about to run its backward.
  void entering(std::uint64_t entry_id) { running_entry_ = entry_id; }
  // The walk has run (or skipped) entry `index`: leaves that only entries at `index` or newer
  // read have their final total now, so their hooks run.
  void passed(std::size_t index);
  // Finishes the remaining leaves; after it, gradient() collects its sources (collect).
  void finish();
  bool creates_graph() const { return create_graph_; }
  // The gradient the finished walk kept for `source`, undefined when none reached it.
  template <class T> Tensor<T> collect(const Tensor<T>& source);

  // For the routing functions below.
  bool has_sources() const { return sources_ != nullptr; }
  bool is_source(const NodeBase& leaf) const;
  // TapeError when `intermediate` was made by the entry running or a newer one (the walk has
  // passed its entry), or by an op not on the walking tape (the walk never reaches it): a
  // gradient added to it would be dropped.
  void check_not_newer(const NodeBase& intermediate) const;
  // The gradient this walk keeps for node, to add into; null when none yet. TapeError for a leaf
  // whose hooks this walk has already run.
  HeldGradient* kept_for(const NodeBase& node);
  bool keeps(const NodeBase& node) const { return kept_.contains(&node); }
  HeldGradient take(const NodeBase& node);
  void put(const NodeBase& node, HeldGradient gradient) { kept_[&node] = std::move(gradient); }
  // Keeps node's first gradient in this walk. A hooked leaf is finished once the walk passes its
  // oldest reader: `finish_leaf` (null: nothing to finish) runs its hooks and hands the result on;
  // it is typed, the walk knows no element type.
  using FinishLeaf = void (*)(Walk&, NodeBase&);
  void keep_new(NodeBase& node, HeldGradient gradient, FinishLeaf finish_leaf);

 private:
  std::size_t oldest_reader(const NodeBase& leaf);

  const std::vector<const NodeBase*>* sources_;
  bool create_graph_;
  std::unordered_map<const NodeBase*, HeldGradient> kept_;
  const std::vector<std::shared_ptr<const GradientTape::Entry>>* entries_ = nullptr;
  std::uint64_t running_entry_ = UINT64_MAX;  // no entry running: nothing is "newer"
  std::unordered_map<const NodeBase*, std::size_t> oldest_reader_;
  bool scanned_ = false;
  struct Deferred {
    std::shared_ptr<NodeBase> leaf;
    std::size_t final_after;  // the index of the oldest entry reading it (0: the walk's end)
    FinishLeaf finish;
  };
  static bool finishes_later(const Deferred& a, const Deferred& b) { return a.final_after < b.final_after; }
  std::vector<Deferred> deferred_;  // a heap, the largest final_after on top
  std::unordered_set<const NodeBase*> finished_;
  bool finishing_ = false;
  Walk* previous_;
};

bool walk_running();
bool walk_creates_graph();

// "Arrives": a backward formula's vector-Jacobian product for x (an array in a first-order walk,
// a tensor from a formula in either walk; under create_graph the tensor is recorded). Outside a
// walk (a user calling add_gradient), x's hooks run, then it is added to grad().
template <class T> void route(Node<T>& x, xt::xarray<T>&& g);
template <class T> void route(Node<T>& x, Tensor<T> g);

// backward's seed for the output it starts from: moved in when owned; when lent, lent on to a
// non-leaf (its formula reads it in place) and copied into a leaf.
template <class T> void seed(Node<T>& output, xt::xarray<T>&& g);
template <class T> void seed(Node<T>& output, const xt::xarray<T>& g);
// gradient(..., create_graph)'s seed, kept by the walk as a recorded tensor.
template <class T> void seed_graph(Node<T>& output, xt::xarray<T> g);

// x's hooks on g, in registration order: the last replacement, nullopt when none replaced it.
// First-order walks, and gradients arriving outside a walk.
template <class T> std::optional<xt::xarray<T>> run_hooks(const Node<T>& x, const xt::xarray<T>& g);
// The same on a recorded gradient (create_graph): a tensor hook's replacement is recorded.
template <class T> Tensor<T> run_hooks_recorded(const Node<T>& x, Tensor<T> g);

// "The walk reaches the output's entry" for an intermediate: runs apply(g) on the output's
// gradient after its hooks, keeping a retained one. In a first-order walk the formula gets the
// gradient moved out of the node (valid for the whole call even if the formula clears the
// output's gradient); a lent one is read in place as a handle the formula does not own, so an
// input taking it unchanged gets a copy and the caller's array is never moved or written.
template <class T, class Apply> void run_formula(Node<T>& output, const Apply& apply);
// A closure on plain arrays (custom ops written before create_graph): first-order walks only.
template <class T, class Closure>
void run_array_closure(Node<T>& output, const char* op, const xt::xarray<T>& output_value, Closure& closure);
// A create_graph walk reached an op whose backward runs on plain arrays.
[[noreturn]] void throw_not_differentiable_twice(const char* op);

// ---- implementation of the templates above that take a formula ----

template <class T> Tensor<T> take_graph_gradient(Node<T>& output);          // hooks applied
template <class T> void keep_retained_graph_gradient(Node<T>& output, const Tensor<T>& g);

template <class T, class Apply>
void run_formula_on_lent(Node<T>& output, const xt::xarray<T>& lent, const Apply& apply) {
  const Tensor<T> g(Node<T>::lending(lent));
  const auto end_loan = [&] {
    if (g.node().use_count() > 1) g.node()->own_value();  // a handle the formula kept reads its own copy
  };
  try {
    apply(g);
  } catch (...) {
    end_loan();
    throw;
  }
  end_loan();
  if (output.retains_grad) output.accumulate_grad(xt::xarray<T>(lent));  // grad() must not alias the caller's array
}

template <class T, class Apply>
void run_formula(Node<T>& output, const Apply& apply) {
  if (walk_creates_graph()) {
    const Tensor<T> g = take_graph_gradient(output);
    apply(g);
    if (output.retains_grad) keep_retained_graph_gradient(output, g);
    return;
  }
  std::optional<xt::xarray<T>> grad;
  if (const xt::xarray<T>* lent = output.take_lent_grad()) {
    if (output.has_hooks()) grad = run_hooks(output, *lent);
    if (!grad) return run_formula_on_lent(output, *lent, apply);
  } else {
    grad = output.take_grad();
    if (output.has_hooks()) {
      if (auto replaced = run_hooks(output, *grad)) grad = std::move(replaced);
    }
  }
  Tensor<T> g(std::move(*grad));
  if (!output.retains_grad) {
    // The formula gets the only handle: one taking g by value can pass its storage on (the last
    // input it reaches takes the array instead of a copy).
    apply(std::move(g));
    return;
  }
  apply(g);
  output.accumulate_grad(std::move(g.node()->value));
}

template <class T, class Closure>
void run_array_closure(Node<T>& output, const char* op, const xt::xarray<T>& output_value, Closure& closure) {
  if (walk_creates_graph()) throw_not_differentiable_twice(op);
  std::optional<xt::xarray<T>> grad = output.take_grad();
  if (output.has_hooks()) {
    if (auto replaced = run_hooks(output, *grad)) grad = std::move(replaced);
  }
  closure(*grad, output_value);
  if (output.retains_grad) output.accumulate_grad(std::move(*grad));
}

}  // namespace tapegrad::detail
