#pragma once
// create_graph walks (GradientTape::gradient with create_graph): how gradients that are recorded
// tensors reach an op's inputs, pass through hooks and come back out to the caller. The walk
// keeps them (detail/walk.h); these functions must run inside such a walk.
#include "autograd/tensor.h"

namespace tapegrad::detail {

// Adds g to x's gradient in the walk with the recorded add op (a leaf the walk was not asked
// about drops it). Throws TapeError when g does not have x's shape, as Node::accumulate_grad.
template <class T> void accumulate_in_graph(Node<T>& x, Tensor<T> g);

// The gradient of an op's output, taken from the walk, after the output's hooks. A hook's
// replacement enters the graph as a constant.
template <class T> Tensor<T> take_graph_gradient(const Node<T>& output);

// retain_grad() under create_graph: g is put back in the walk (gradient() may have asked for this
// intermediate) and its value is kept in grad().
template <class T> void retain_graph_gradient(Node<T>& output, const Tensor<T>& g);

class WalkScope;
// The end of gradient(): a source's gradient taken from the finished walk (a leaf's hooks
// applied), or an undefined tensor when none reached it.
template <class T> Tensor<T> collect_walk_gradient(WalkScope& walk, const Tensor<T>& source);

// A create_graph walk reached an op whose backward runs on plain arrays.
[[noreturn]] void throw_not_differentiable_twice(const char* op);

}  // namespace tapegrad::detail
