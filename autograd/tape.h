#pragma once
// GradientTape: an RAII recorder (TensorFlow's GradientTape is the model). While one is alive on
// the current thread, every op whose inputs need a gradient appends one entry: its output node and
// a backward closure that adds vector-Jacobian products into its inputs' gradients. With no tape
// alive, nothing is recorded and nothing is saved, so inference and optimiser steps cost nothing.
//
// Rules (each tested in tests/test_tape.cpp):
// - backward(loss) seeds 1 for a single-element loss; backward(output, seed) any shape.
// - The walk is iterative, newest entry to oldest; there is no recursion to overflow.
// - Leaf gradients accumulate across backward calls until zero_grad(). An intermediate's gradient
//   is dropped as soon as the walk has used it, except on tensors marked retain_grad(), which
//   keep the gradient of the latest walk.
// - A non-persistent tape releases its entries (and everything they saved) after backward, so
//   size() returns to 0; a second backward on it throws TapeError. A persistent tape keeps them.
// - Nested tapes: an op records on every tape alive on the thread, so an outer tape also sees
//   what was computed while an inner one was alive. Backward closures are not themselves
//   recorded: there are no higher-order gradients.
// - NoGradGuard pauses recording on this thread for its lifetime.
#include <cstddef>
#include <functional>
#include <memory>
#include "autograd/source_location.h"
#include <vector>

#include "autograd/tensor.h"

namespace tapegrad {

class GradientTape {
 public:
  explicit GradientTape(bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  // Backward from a single-element loss (d loss = 1).
  template <class T> void backward(const Tensor<T>& loss);
  // Backward from any output with the given seed (d output = seed, same shape as output).
  template <class T> void backward(const Tensor<T>& output, const xt::xarray<T>& seed);

  // Number of recorded entries not yet released.
  std::size_t size() const { return entries_.size(); }
  bool persistent() const { return persistent_; }

  struct Entry {
    std::shared_ptr<NodeBase> output;
    const char* op;
    std::function<void()> backward;  // reads the output's gradient, accumulates into inputs
    std::source_location where;       // the op's call site, for anomaly reports
  };
  // Used by ops (through detail::make_result): appends to every tape alive on this thread.
  static void record(std::shared_ptr<const Entry> entry);

 private:
  void walk();
  bool records(const NodeBase& node) const;

  std::vector<std::shared_ptr<const Entry>> entries_;  // shared: nested tapes may hold one entry
  bool persistent_;
  bool used_ = false;
};

// Pauses recording on this thread while alive.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;
};

// True when a tape is alive on this thread and no NoGradGuard pauses it.
bool is_recording();

}  // namespace tapegrad
