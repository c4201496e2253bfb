#include "autograd/detail/graph_gradient.h"

#include <string>

#include "autograd/anomaly.h"
#include "autograd/detail/walk.h"
#include "autograd/ops/elementwise.h"

namespace tapegrad::detail {

namespace {

template <class T>
Tensor<T> as_tensor(const HeldGradient& gradient) {
  return Tensor<T>(std::static_pointer_cast<Node<T>>(gradient.get()));
}

// Runs node's hooks on g's value; a replacement becomes a constant.
template <class T>
Tensor<T> hooked(const Node<T>& node, Tensor<T> g) {
  if (node.hooks.empty()) return g;
  xt::xarray<T> value = g.value();
  return node.apply_hooks(value) ? Tensor<T>(std::move(value)) : g;
}

}  // namespace

template <class T>
void accumulate_in_graph(Node<T>& x, Tensor<T> g) {
  x.require_gradient_shape(g.value());
  if (is_anomaly_enabled()) [[unlikely]] check_gradient(x, g.value());
  if (x.is_leaf && leaf_gradient(x, false) == LeafGradient::drop) return;
  if (const HeldGradient previous = take_walk_gradient(x)) g = add(as_tensor<T>(previous), g);
  put_walk_gradient(x, HeldGradient(g.node()));
}

template <class T>
Tensor<T> take_graph_gradient(const Node<T>& output) {
  return hooked(output, as_tensor<T>(take_walk_gradient(output)));
}

template <class T>
void retain_graph_gradient(Node<T>& output, const Tensor<T>& g) {
  output.accumulate_grad(xt::xarray<T>(g.value()));
  put_walk_gradient(output, HeldGradient(g.node()));
}

template <class T>
Tensor<T> collect_walk_gradient(WalkScope& walk, const Tensor<T>& source) {
  const HeldGradient g = walk.take_gradient(*source.node());
  if (!g) return {};
  // An intermediate's hooks ran before its op's backward read the gradient.
  return source.is_leaf() ? hooked(*source.node(), as_tensor<T>(g)) : as_tensor<T>(g);
}

void throw_not_differentiable_twice(const char* op) {
  throw TapeError(std::string("create_graph: the backward of ") + op +
                  " runs on plain arrays, so it cannot be recorded and differentiated again; write its "
                  "backward as a formula over tensors (autograd/custom_op.h)");
}

#define TAPEGRAD_INSTANTIATE(T)                                                   \
  template void accumulate_in_graph(Node<T>&, Tensor<T>);                         \
  template Tensor<T> take_graph_gradient(const Node<T>&);                         \
  template void retain_graph_gradient(Node<T>&, const Tensor<T>&);                \
  template Tensor<T> collect_walk_gradient(WalkScope&, const Tensor<T>&);
TAPEGRAD_INSTANTIATE(float)
TAPEGRAD_INSTANTIATE(double)
#undef TAPEGRAD_INSTANTIATE

}  // namespace tapegrad::detail
