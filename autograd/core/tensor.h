#pragma once
// Tensor<T>: a cheap, shared handle to a node that holds a value (row-major, contiguous
// xt::xarray<T>), an optional gradient of the same shape, requires_grad and a name.
// T is float for training and double for gradient checks; both are explicitly instantiated in
// core/tensor.cpp. Ops never alias: every op returns a tensor with storage of its own.
#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

#include "autograd/base/call_site.h"
#include "autograd/base/checks.h"
#include "autograd/base/errors.h"
#include "autograd/base/generator.h"

namespace tapegrad {

using IndexArray = xt::xarray<Index>;

// What the tape needs to know of a node without knowing its element type.
class NodeBase : public std::enable_shared_from_this<NodeBase> {
 public:
  virtual ~NodeBase() = default;
  virtual bool has_grad() const = 0;
  virtual void clear_grad() = 0;
  // "'name' [2,3]" or "[2,3]": how a tensor is named in messages.
  virtual std::string describe() const = 0;
  // describe() and where the tensor came from: "'x' [2,3] (output of mul)" or "[2,3] (a leaf)".
  std::string describe_origin() const;

  // Who may still read the value. A backward formula keeps an input it does not read as an edge
  // (detail::Edge: the node without a claim on its value, Flashlight's withoutData()), so a
  // node made by a recorded op keeps its value only while something holds it: a Tensor handle, a
  // formula that reads it, or a create_graph walk carrying it as a gradient. When the last hold
  // goes while edges still reach the node, the value is freed (release_value); the gradient,
  // shape, version and name stay. A leaf keeps its value whoever holds it.
  void hold_value() noexcept { value_holds_.fetch_add(1, std::memory_order_relaxed); }
  // Drops one hold; `node_outlives` says whether anything else keeps the node (freeing the value
  // of a node about to be destroyed would be wasted work).
  void drop_value_hold(bool node_outlives) noexcept {
    if (value_holds_.fetch_sub(1, std::memory_order_acq_rel) == 1 && node_outlives && !is_leaf) release_value();
  }

  // Whether exactly one hold remains: a caller owning that hold (an rvalue handle) is then the
  // only one that could still read the value.
  bool sole_value_hold() const noexcept { return value_holds_.load(std::memory_order_acquire) == 1; }

  bool requires_grad = false;
  bool is_leaf = true;        // made by the user, not by a recorded op
  bool retains_grad = false;  // an intermediate whose gradient survives backward (retain_grad())
  std::string name;           // optional, used in messages
  const char* op = nullptr;   // the op that produced it, for messages; null for a leaf
  // Counts in-place writes of the value (every mutable_value() call: optimiser steps,
  // load_state_dict, initialisers). A recorded op remembers the versions of the tensors it read,
  // and backward refuses to run its closure once one has changed (PyTorch's rule): the closure
  // would compute with the new value and return a silently wrong gradient.
  std::uint64_t version = 0;
  // The id of the tape entry that produced this node (0: a leaf, or an output nothing recorded).
  // The backward walk checks that every non-leaf it hands a gradient to has its producer on the
  // walking tape; otherwise the gradient would stop there without a word.
  std::uint64_t producer = 0;

 protected:
  virtual void release_value() noexcept = 0;

  // Serialises gradient writes: two threads running backward into one shared parameter (or one
  // zeroing it while another accumulates) must not lose updates or corrupt the buffer.
  mutable std::mutex grad_mutex_;

 private:
  std::atomic<std::uint32_t> value_holds_{0};
};

// A shared pointer to a node that holds the node's value while it lives (NodeBase::hold_value):
// what a Tensor handle is, and how a create_graph walk keeps the gradients it carries.
template <class N>
class ValueHold {
 public:
  ValueHold() = default;
  explicit ValueHold(std::shared_ptr<N> node) : node_(std::move(node)) {
    if (node_) node_->hold_value();
  }
  ValueHold(const ValueHold& other) noexcept : ValueHold(other.node_) {}
  ValueHold(ValueHold&& other) noexcept = default;
  ValueHold& operator=(const ValueHold& other) noexcept { return *this = ValueHold(other); }
  ValueHold& operator=(ValueHold&& other) noexcept {
    ValueHold taken(std::move(other));
    std::swap(node_, taken.node_);
    return *this;
  }
  ~ValueHold() {
    if (node_) node_->drop_value_hold(node_.use_count() > 1);
  }
  explicit operator bool() const { return node_ != nullptr; }
  N* operator->() const { return node_.get(); }
  const std::shared_ptr<N>& get() const { return node_; }

 private:
  std::shared_ptr<N> node_;
};

template <class T> class Tensor;

// A gradient hook (Tensor::register_hook): sees the gradient flowing into a tensor and returns a
// replacement of the same shape, or std::nullopt to leave it as it is. A hook on arrays sees
// values; a hook on tensors sees the gradient as a tensor, which under create_graph is recorded,
// so that its replacement, computed with tapegrad's ops, is differentiated again.
template <class T>
using GradHook = std::function<std::optional<xt::xarray<T>>(const xt::xarray<T>&)>;
template <class T>
using TensorGradHook = std::function<std::optional<Tensor<T>>(const Tensor<T>&)>;

// One registered hook, of either kind (exactly one is set).
template <class T>
struct RegisteredHook {
  GradHook<T> on_array;
  TensorGradHook<T> on_tensor;
};
// A node's hooks as one walk sees them: the list when the gradient arrived. Registering or
// removing a hook (from a hook, or another thread) makes a new list; a walk already running its
// hooks keeps the one it took, so a hook that removes itself is not freed while it runs.
template <class T>
using HookList = std::shared_ptr<const std::vector<std::pair<std::uint64_t, RegisteredHook<T>>>>;

// An op's scalar argument: T, but not deduced from it, so that `mul(x, 2.0)` and
// `masked_fill(x, m, -INFINITY)` compile whether x holds float or double.
template <class T> using Scalar = std::type_identity_t<T>;

template <class T>
class Node final : public NodeBase {
 public:
  explicit Node(xt::xarray<T>&& v) : value(std::move(v)) {}
  bool has_grad() const override;
  void clear_grad() override;
  std::string describe() const override;
  // Adds g into grad() (the first contribution is moved in), under the node's lock. Throws
  // TapeError naming both shapes when g does not have the value's shape: that is a bug in some
  // op's backward. Storage only: where a gradient goes during a walk is decided by
  // core/routing.h, which calls this once it has decided that g belongs in grad().
  void accumulate_grad(xt::xarray<T>&& g);
  // That shape check alone.
  void require_gradient_shape(const xt::xarray<T>& g) const;
  // Replaces the gradient (shape already checked), under the node's lock.
  void set_grad(xt::xarray<T>&& g);
  // Moves the gradient out (the node is left without one; a lent one is copied), under the node's lock.
  std::optional<xt::xarray<T>> take_grad();
  // Makes g the gradient without copying it (backward's seed, GradientTape::backward): the node
  // only points to it, so the caller keeps it alive and unchanged until the loan ends. The loan
  // ends with take_lent_grad or clear_grad; take_grad, accumulate_grad and own_grad copy g.
  void lend_grad(const xt::xarray<T>& g);
  // The lent gradient, which the node no longer points to; null when the gradient is not lent.
  const xt::xarray<T>* take_lent_grad();
  // Copies a lent gradient into the node, which then owns it (a walk that threw before reading it).
  void own_grad();
  // The hooks registered now (null when none), and a cheap test for any.
  HookList<T> hooks() const;
  bool has_hooks() const noexcept { return hook_count_.load(std::memory_order_acquire) != 0; }
  // Register and remove (Tensor::register_hook, remove_hook); remove is false for an unknown id.
  std::uint64_t add_hook(RegisteredHook<T> hook);
  bool remove_hook(std::uint64_t id);
  // The value's shape, also once the value has been released.
  Shape value_shape() const;
  bool value_released() const { return released_shape_.has_value(); }

  // A leaf whose value is `array`, lent and read in place rather than copied: the caller keeps
  // the array alive and unchanged while the node lends it, and calls own_value() before the node
  // can outlive the loan. The `value` member stays empty while lent: read stored_value().
  // (run_formula hands backward's lent seed to a formula this way.)
  static std::shared_ptr<Node> lending(const xt::xarray<T>& array);
  const xt::xarray<T>& stored_value() const { return lent_value_ ? *lent_value_ : value; }
  // Ends a loan: copies the lent array into `value`.
  void own_value();

  // Moves the value out and leaves the node as a released one (value_shape() still answers), for
  // a caller holding the value's only hold that will not read it again (ops/shape.cpp's reshape of
  // a temporary).
  xt::xarray<T> take_value();

  // Empty once released (NodeBase::hold_value), and while lent (lending).
  xt::xarray<T> value;
  std::optional<xt::xarray<T>> grad;

 private:
  void release_value() noexcept override;
  // Whether g has the value's shape (kept in released_shape_ once the value is released).
  bool has_value_shape(const xt::xarray<T>& g) const;
  void own_grad_locked();  // own_grad, the lock held

  HookList<T> hooks_;                   // by id, in registration order; replaced, never changed
  std::atomic<std::size_t> hook_count_{0};
  const xt::xarray<T>* lent_grad_ = nullptr;         // the gradient when lent (lend_grad), else `grad`
  const xt::xarray<T>* lent_value_ = nullptr;        // the value when lent (lending), else `value`
  std::optional<Shape> released_shape_;
};

template <class T>
class Tensor {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "Tensor<T> is for float and double");

 public:
  using value_type = T;

  // An undefined tensor (defined() is false), e.g. an absent bias.
  Tensor() = default;
  // The array moves into the node (a copy of an lvalue): two overloads rather than one taking it
  // by value, since each move of an xarray costs about as much as a small op's arithmetic.
  explicit Tensor(xt::xarray<T>&& value, bool requires_grad = false);
  explicit Tensor(const xt::xarray<T>& value, bool requires_grad = false);
  // Another handle to an existing node (ops and backward formulas use it for an op's output). The
  // node's value must not have been released (NodeBase::hold_value): TapeError otherwise.
  explicit Tensor(std::shared_ptr<Node<T>> node);

  static Tensor zeros(const Shape& shape, bool requires_grad = false);
  static Tensor ones(const Shape& shape, bool requires_grad = false);
  static Tensor full(const Shape& shape, T value, bool requires_grad = false);
  // [start, stop) in steps of step, as a 1-D tensor.
  static Tensor arange(T start, T stop, T step = T(1));
  static Tensor randn(const Shape& shape, Generator& gen, T mean = T(0), T std = T(1), bool requires_grad = false);
  static Tensor uniform(const Shape& shape, Generator& gen, T low = T(0), T high = T(1), bool requires_grad = false);

  bool defined() const { return static_cast<bool>(node_); }
  Shape shape() const;
  std::size_t ndim() const;
  std::size_t numel() const;
  // Size of one axis; negative axes count from the end.
  std::size_t size(Index axis) const;

  const xt::xarray<T>& value() const;
  // In-place access for optimisers and initialisers. Each call counts as one in-place write (it
  // bumps the tensor's version), so a backward through an op that read the old value throws
  // TapeError instead of using the new one. Write through the reference right away: a reference
  // kept across later ops bypasses the check. The shape must stay the same.
  xt::xarray<T>& mutable_value();
  // How many in-place writes the value has had (see NodeBase::version).
  std::uint64_t version() const;

  bool has_grad() const;
  // The accumulated gradient; throws TapeError when there is none yet.
  const xt::xarray<T>& grad() const;
  // Drops the gradient (leaves accumulate across backward calls until this). Safe while another
  // thread's backward accumulates into the same tensor.
  void zero_grad();
  // Replaces the gradient with `grad` (PyTorch's `t.grad = g`), e.g. to clip or average gradients
  // by hand before an optimiser step. ValueError naming both shapes unless grad has the value's
  // shape. Any tensor may be given one, as in PyTorch; backward then accumulates into it.
  Tensor& set_grad(xt::xarray<T> grad);

  bool requires_grad() const;
  // Only a leaf's flag can be set: an op's output requires a gradient exactly when it was recorded.
  Tensor& set_requires_grad(bool requires_grad);
  // Keeps this intermediate's gradient after backward (e.g. an attention map's dL/dA).
  Tensor& retain_grad();
  // Registers a gradient hook (PyTorch's Tensor.register_hook) and returns its id for
  // remove_hook. In each backward walk the hook sees the gradient of the loss with respect to
  // this tensor once it is complete: for an op's output, before that op's backward reads it (a
  // replacement flows on to the inputs, and is what retain_grad() keeps); for a leaf, that
  // walk's own total (walks on other threads keep theirs apart), before it is added to grad(),
  // as soon as the walk has passed the oldest op reading the leaf (older ops' backward still
  // runs after the hook). Several hooks run in registration order. A replacement of another
  // shape throws TapeError. Under create_graph, a hook on tensors gets the recorded gradient and
  // its replacement is recorded; a hook on arrays that replaces the gradient there throws
  // TapeError (its replacement could not be differentiated). The full rules, row by row, are in
  // autograd/core/routing.h. Hooks run on the thread running backward; a hook may run a
  // backward on a tape it makes (that tape records), not on (or clear) the walking one.
  std::uint64_t register_hook(GradHook<T> hook);
  std::uint64_t register_hook(TensorGradHook<T> hook);
  // Removes a hook by id; ValueError when this tensor has no hook with that id. A walk already
  // running this tensor's hooks still runs the ones it started with.
  void remove_hook(std::uint64_t id);
  bool is_leaf() const;

  const std::string& name() const;
  Tensor& set_name(std::string name);
  // "'name' [2,3]" or "[2,3]": how a tensor is named in messages.
  std::string describe() const;

  // The single element as a plain scalar, with no graph; ValueError unless numel() == 1.
  T item() const;
  // A new leaf with a copy of the value and no gradient history.
  Tensor detach() const;
  // Differentiable conversion to another element type (float <-> double).
  template <class U> Tensor<U> to(CallSite where = std::source_location::current()) const;

  // Whether two handles share one node.
  bool same_node(const Tensor& other) const { return node_.get() == other.node_.get(); }
  const std::shared_ptr<Node<T>>& node() const;

 private:
  ValueHold<Node<T>> node_;  // every handle holds the node's value
};

extern template class Tensor<float>;
extern template class Tensor<double>;

// ValueError when t is undefined, naming op and argument.
template <class T>
void require_defined(const Tensor<T>& t, std::string_view op, std::string_view argument) {
  if (!t.defined()) throw undefined_argument(op, argument);
}

// Prints the tensor's name, shape, element type, whether it requires a gradient (and has one), the
// op that made it, then its values as xtensor prints them (summarised with "..." beyond 1000
// elements): e.g.
//   tensor 'w' [2,2] float64 requires_grad, made by matmul
//   {{ 1.,  2.},
//    { 3.,  4.}}
template <class T> std::ostream& operator<<(std::ostream& out, const Tensor<T>& tensor);

}  // namespace tapegrad
