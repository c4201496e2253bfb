#include "autograd/core/tensor.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <tbb/scalable_allocator.h>
#include <xtensor/xbuilder.hpp>

#include "autograd/base/callback_ids.h"
#include "autograd/base/checks.h"
#include "autograd/kernels/simd/map.h"
#include "autograd/memory/malloc_policy.h"

namespace tapegrad {

namespace {
// Every program that makes a tensor links this file, so the policy is applied at load time.
[[maybe_unused]] const bool malloc_policy_applied = detail::apply_malloc_policy();

// acc += add: fan-out points (residual connections) add a gradient the size of an activation on
// every backward.
template <class T>
void add_into(xt::xarray<T>& acc, const xt::xarray<T>& add) {
  kernels::add_into(add.size(), acc.data(), add.data());
}
}  // namespace

template <class T>
bool Node<T>::has_grad() const {
  const std::lock_guard lock(grad_mutex_);
  return grad.has_value() || lent_grad_ != nullptr;
}

template <class T>
void Node<T>::clear_grad() {
  const std::lock_guard lock(grad_mutex_);
  grad.reset();
  lent_grad_ = nullptr;
}

template <class T>
void Node<T>::lend_grad(const xt::xarray<T>& g) {
  require_gradient_shape(g);
  const std::lock_guard lock(grad_mutex_);
  grad.reset();
  lent_grad_ = &g;
}

template <class T>
const xt::xarray<T>* Node<T>::take_lent_grad() {
  const std::lock_guard lock(grad_mutex_);
  return std::exchange(lent_grad_, nullptr);
}

template <class T>
void Node<T>::own_grad() {
  const std::lock_guard lock(grad_mutex_);
  own_grad_locked();
}

template <class T>
void Node<T>::own_grad_locked() {
  if (lent_grad_) grad = *std::exchange(lent_grad_, nullptr);
}

template <class T>
Shape Node<T>::value_shape() const {
  if (released_shape_) return *released_shape_;
  const xt::xarray<T>& v = stored_value();
  return Shape(v.shape().begin(), v.shape().end());
}

template <class T>
bool Node<T>::has_value_shape(const xt::xarray<T>& g) const {
  if (released_shape_) return std::equal(g.shape().begin(), g.shape().end(), released_shape_->begin(), released_shape_->end());
  const xt::xarray<T>& v = stored_value();
  return std::equal(g.shape().begin(), g.shape().end(), v.shape().begin(), v.shape().end());
}

template <class T>
std::shared_ptr<Node<T>> Node<T>::lending(const xt::xarray<T>& array) {
  auto node = std::make_shared<Node>(xt::xarray<T>::from_shape({0}));
  node->lent_value_ = &array;
  return node;
}

template <class T>
void Node<T>::own_value() {
  if (lent_value_) value = *std::exchange(lent_value_, nullptr);
}

template <class T>
xt::xarray<T> Node<T>::take_value() {
  own_value();  // a lent array is the lender's: what is taken is a copy
  released_shape_ = value_shape();
  return std::exchange(value, xt::xarray<T>::from_shape({0}));
}

template <class T>
void Node<T>::release_value() noexcept {
  // Runs from a handle's destructor: should an allocation fail, the value is simply kept.
  try {
    Shape shape = value_shape();
    value = xt::xarray<T>::from_shape({0});
    released_shape_ = std::move(shape);
  } catch (...) {
  }
}

std::string NodeBase::describe_origin() const {
  return describe() + (op ? std::string(" (output of ") + op + ")" : " (a leaf)");
}

template <class T>
std::string Node<T>::describe() const {
  const std::string shape_text = format_shape(value_shape());
  return name.empty() ? shape_text : "'" + name + "' " + shape_text;
}

template <class T>
void Node<T>::set_grad(xt::xarray<T>&& g) {
  const std::lock_guard lock(grad_mutex_);
  grad = std::move(g);
  lent_grad_ = nullptr;
}

template <class T>
std::optional<xt::xarray<T>> Node<T>::take_grad() {
  const std::lock_guard lock(grad_mutex_);
  own_grad_locked();
  std::optional<xt::xarray<T>> out = std::move(grad);
  grad.reset();
  return out;
}

template <class T>
void Node<T>::require_gradient_shape(const xt::xarray<T>& g) const {
  if (!has_value_shape(g)) {
    throw TapeError(std::string("gradient of shape ") + format_shape(g.shape()) + " does not match tensor" +
                    (name.empty() ? "" : " '" + name + "'") + " of shape " + format_shape(value_shape()) +
                    (op ? std::string(" produced by ") + op : std::string()));
  }
}

template <class T>
void Node<T>::accumulate_grad(xt::xarray<T>&& g) {
  require_gradient_shape(g);
  const std::lock_guard lock(grad_mutex_);
  own_grad_locked();
  if (grad) add_into(*grad, g);
  else grad = std::move(g);
}

template <class T>
HookList<T> Node<T>::hooks() const {
  if (!has_hooks()) return nullptr;
  const std::lock_guard lock(grad_mutex_);
  return hooks_;
}

template <class T>
std::uint64_t Node<T>::add_hook(RegisteredHook<T> hook) {
  const std::lock_guard lock(grad_mutex_);
  using Hooks = std::remove_const_t<typename HookList<T>::element_type>;
  auto list = hooks_ ? std::make_shared<Hooks>(*hooks_) : std::make_shared<Hooks>();
  const std::uint64_t id = add_callback(*list, std::move(hook));
  hooks_ = std::move(list);
  hook_count_.store(hooks_->size(), std::memory_order_release);
  return id;
}

template <class T>
bool Node<T>::remove_hook(std::uint64_t id) {
  const std::lock_guard lock(grad_mutex_);
  if (!hooks_) return false;
  auto list = std::make_shared<std::remove_const_t<typename HookList<T>::element_type>>(*hooks_);
  if (!remove_callback(*list, id)) return false;
  hook_count_.store(list->size(), std::memory_order_release);
  hooks_ = list->empty() ? nullptr : std::move(list);
  return true;
}

namespace {
// A plain pointer: a copy of the shared_ptr would cost two atomic operations on every accessor call.
template <class T>
Node<T>* checked(const std::shared_ptr<Node<T>>& node, const char* accessor) {
  if (!node) {
    throw ValueError(std::string("Tensor::") + accessor +
                     ": use of an undefined tensor (default-constructed, e.g. an absent bias)");
  }
  return node.get();
}

// Nodes (about 900 bytes with their count block, made and freed by the thousand in every step)
// come from TBB's scalable allocator, in slabs of their own. From glibc's heap they would land in
// the holes the large buffers leave (memory/malloc_policy.h keeps those buffers in the heap) and split
// them, so the heap outgrows its peak use: measured on the paper-size training step, 10 MiB of
// peak RSS over 393 MiB of peak heap. Under AddressSanitizer they stay with malloc, which ASan checks.
template <class T>
std::shared_ptr<Node<T>> make_node(xt::xarray<T>&& value) {
#ifdef TAPEGRAD_UNDER_ASAN
  return std::make_shared<Node<T>>(std::move(value));
#else
  return std::allocate_shared<Node<T>>(tbb::scalable_allocator<Node<T>>(), std::move(value));
#endif
}
}  // namespace

template <class T>
Tensor<T>::Tensor(xt::xarray<T>&& value, bool requires_grad) : node_(make_node(std::move(value))) {
  node_->requires_grad = requires_grad;
}

template <class T>
Tensor<T>::Tensor(const xt::xarray<T>& value, bool requires_grad) : Tensor(xt::xarray<T>(value), requires_grad) {}

namespace {
template <class T>
std::shared_ptr<Node<T>> with_value(std::shared_ptr<Node<T>> node) {
  if (node && node->value_released()) {
    throw TapeError("Tensor: the value of " + node->describe() +
                    (node->op ? std::string(" made by ") + node->op : std::string()) +
                    " was freed when its last handle went (a backward formula keeps only the values it reads); "
                    "keep a Tensor handle to it to read it later");
  }
  return node;
}
}  // namespace

template <class T>
Tensor<T>::Tensor(std::shared_ptr<Node<T>> node) : node_(with_value(std::move(node))) {}

template <class T>
Tensor<T> Tensor<T>::zeros(const Shape& shape, bool requires_grad) {
  return Tensor(xt::xarray<T>(xt::zeros<T>(allocatable(shape, sizeof(T), "zeros"))), requires_grad);
}

template <class T>
Tensor<T> Tensor<T>::ones(const Shape& shape, bool requires_grad) {
  return Tensor(xt::xarray<T>(xt::ones<T>(allocatable(shape, sizeof(T), "ones"))), requires_grad);
}

template <class T>
Tensor<T> Tensor<T>::full(const Shape& shape, T value, bool requires_grad) {
  xt::xarray<T> v = xt::xarray<T>::from_shape(allocatable(shape, sizeof(T), "full"));
  v.fill(value);
  return Tensor(std::move(v), requires_grad);
}

template <class T>
Tensor<T> Tensor<T>::arange(T start, T stop, T step) {
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    throw ValueError("arange: start, stop and step must be finite, got start " + format_number(start) +
                     ", stop " + format_number(stop) + ", step " + format_number(step));
  }
  if (step == T(0)) throw ValueError("arange: step must not be 0");
  if ((stop - start) * step < T(0)) {
    throw ValueError("arange: step " + format_number(step) + " moves away from stop " +
                     format_number(stop) + " (start " + format_number(start) + ")");
  }
  return Tensor(xt::xarray<T>(xt::arange<T>(start, stop, step)));
}

template <class T>
Tensor<T> Tensor<T>::randn(const Shape& shape, Generator& gen, T mean, T std, bool requires_grad) {
  if (!std::isfinite(mean) || !std::isfinite(std) || std < T(0)) {
    throw ValueError("randn: mean and std must be finite and std >= 0, got mean " + format_number(mean) +
                     ", std " + format_number(std));
  }
  xt::xarray<T> v = xt::xarray<T>::from_shape(allocatable(shape, sizeof(T), "randn"));
  gen.fill_normal(v.data(), v.size(), mean, std);
  return Tensor(std::move(v), requires_grad);
}

template <class T>
Tensor<T> Tensor<T>::uniform(const Shape& shape, Generator& gen, T low, T high, bool requires_grad) {
  if (!(low < high) || !std::isfinite(low) || !std::isfinite(high)) {
    throw ValueError("uniform: low must be below high and both finite, got [" + format_number(low) + ", " +
                     format_number(high) + ")");
  }
  xt::xarray<T> v = xt::xarray<T>::from_shape(allocatable(shape, sizeof(T), "uniform"));
  gen.fill_uniform(v.data(), v.size(), low, high);
  return Tensor(std::move(v), requires_grad);
}

namespace {
// checked, and the value still in the node: reshape(std::move(t)) may have moved t's value into
// its result (ops/shape.h), and a handle used after that must not read an empty array silently.
template <class T>
Node<T>* readable(const std::shared_ptr<Node<T>>& node, const char* accessor) {
  checked(node, accessor);
  if (node->value_released()) {
    throw TapeError(std::string("Tensor::") + accessor + ": the value of " + node->describe() +
                    (node->op ? std::string(" made by ") + node->op : std::string()) +
                    " was moved into a reshape or view of this handle passed with std::move; read the result "
                    "instead, or pass the handle without std::move (the value is then copied)");
  }
  return node.get();
}
}  // namespace

template <class T>
Shape Tensor<T>::shape() const { return checked(node_.get(), "shape")->value_shape(); }

template <class T>
std::size_t Tensor<T>::ndim() const {
  const Node<T>& node = *checked(node_.get(), "ndim");
  return node.value_released() ? node.value_shape().size() : node.stored_value().dimension();
}

template <class T>
std::size_t Tensor<T>::numel() const {
  const Node<T>& node = *checked(node_.get(), "numel");
  if (!node.value_released()) return node.stored_value().size();
  const Shape shape = node.value_shape();
  return shape_product(shape);
}

template <class T>
std::size_t Tensor<T>::size(Index axis) const {
  const auto n = static_cast<Index>(ndim());
  const Index a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n) {
    throw ValueError("Tensor::size: axis " + std::to_string(axis) + " is out of range for " + describe());
  }
  const auto index = static_cast<std::size_t>(a);
  return node_->value_released() ? shape()[index] : node_->stored_value().shape()[index];
}

template <class T>
const xt::xarray<T>& Tensor<T>::value() const { return readable(node_.get(), "value")->stored_value(); }

template <class T>
xt::xarray<T>& Tensor<T>::mutable_value() {
  ++readable(node_.get(), "mutable_value")->version;
  node_->own_value();  // never a write into a lender's array
  return node_->value;
}

template <class T>
std::uint64_t Tensor<T>::version() const { return checked(node_.get(), "version")->version; }

template <class T>
bool Tensor<T>::has_grad() const { return checked(node_.get(), "has_grad")->has_grad(); }

template <class T>
const xt::xarray<T>& Tensor<T>::grad() const {
  if (!checked(node_.get(), "grad")->grad) {
    throw TapeError("grad: tensor " + describe() + " has no gradient" +
                    (node_->requires_grad ? " yet (run backward first, or it did not reach the loss)"
                                          : " (it does not require one)"));
  }
  return *node_->grad;
}

template <class T>
void Tensor<T>::zero_grad() { checked(node_.get(), "zero_grad")->clear_grad(); }

template <class T>
Tensor<T>& Tensor<T>::set_grad(xt::xarray<T> grad) {
  const Node<T>& node = *checked(node_.get(), "set_grad");
  const auto& value = node.stored_value();
  if (!std::equal(grad.shape().begin(), grad.shape().end(), value.shape().begin(), value.shape().end())) {
    throw ValueError("set_grad: gradient of shape " + format_shape(grad.shape()) + " for tensor " + describe() +
                     ": it must have the tensor's shape");
  }
  node_->set_grad(std::move(grad));
  return *this;
}

template <class T>
bool Tensor<T>::requires_grad() const { return checked(node_.get(), "requires_grad")->requires_grad; }

template <class T>
Tensor<T>& Tensor<T>::set_requires_grad(bool requires_grad) {
  if (!checked(node_.get(), "set_requires_grad")->is_leaf) {
    throw TapeError("set_requires_grad: " + describe() + " is the output of " + node_->op +
                    "; only a leaf's flag can be set (use detach() for a new leaf)");
  }
  node_->requires_grad = requires_grad;
  return *this;
}

namespace {
template <class T, class Hook>
std::uint64_t register_checked_hook(const std::shared_ptr<Node<T>>& node, Hook&& hook, RegisteredHook<T> registered) {
  if (!hook) throw ValueError("register_hook: the hook for tensor " + checked(node, "register_hook")->describe() + " is empty");
  if (!checked(node, "register_hook")->requires_grad) {
    throw TapeError("register_hook: tensor " + node->describe() + " does not require a gradient, so no gradient will reach a hook");
  }
  return node->add_hook(std::move(registered));
}
}  // namespace

template <class T>
std::uint64_t Tensor<T>::register_hook(GradHook<T> hook) {
  return register_checked_hook(node_.get(), hook, RegisteredHook<T>{.on_array = hook, .on_tensor = {}});
}

template <class T>
std::uint64_t Tensor<T>::register_hook(TensorGradHook<T> hook) {
  return register_checked_hook(node_.get(), hook, RegisteredHook<T>{.on_array = {}, .on_tensor = hook});
}

template <class T>
void Tensor<T>::remove_hook(std::uint64_t id) {
  if (!checked(node_.get(), "remove_hook")->remove_hook(id)) {
    throw ValueError("remove_hook: tensor " + describe() + " has no hook with id " + std::to_string(id));
  }
}

template <class T>
Tensor<T>& Tensor<T>::retain_grad() {
  checked(node_.get(), "retain_grad")->retains_grad = true;
  return *this;
}

template <class T>
bool Tensor<T>::is_leaf() const { return checked(node_.get(), "is_leaf")->is_leaf; }

template <class T>
const std::string& Tensor<T>::name() const { return checked(node_.get(), "name")->name; }

template <class T>
Tensor<T>& Tensor<T>::set_name(std::string name) {
  checked(node_.get(), "set_name")->name = std::move(name);
  return *this;
}

template <class T>
std::string Tensor<T>::describe() const { return node_ ? node_->describe() : "<undefined>"; }

template <class T>
T Tensor<T>::item() const {
  if (readable(node_.get(), "item")->stored_value().size() != 1) {
    throw ValueError("item: tensor " + describe() + " has " + std::to_string(numel()) + " elements, not 1");
  }
  return *node_->stored_value().data();
}

template <class T>
Tensor<T> Tensor<T>::detach() const {
  Tensor out(checked(node_.get(), "detach")->stored_value());
  out.node_->name = node_->name;
  return out;
}

template <class T>
const std::shared_ptr<Node<T>>& Tensor<T>::node() const { return node_.get(); }

template class Node<float>;
template class Node<double>;
template class Tensor<float>;
template class Tensor<double>;

}  // namespace tapegrad
