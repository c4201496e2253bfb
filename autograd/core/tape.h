#pragma once
// GradientTape: an RAII recorder (TensorFlow's GradientTape is the model). While one is alive on
// the current thread, every op whose inputs need a gradient appends one entry: its output node and
// a backward closure that adds vector-Jacobian products into its inputs' gradients. With no tape
// alive, nothing is recorded and nothing is saved, so inference and optimiser steps cost nothing.
//
// The rules of recording and walking (what is recorded, lent seeds, accumulation, single use,
// in-place edits, lifetimes, nested tapes, threads, a backward that throws, NoGradGuard) are
// stated once, in docs/tape.md; each is tested in tests/test_tape.cpp, tests/test_tape_misuse.cpp
// or tests/test_routing.cpp. Where each gradient goes during a walk is one table, at the head of
// autograd/core/routing.h.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "autograd/base/scoped_mode.h"
#include "autograd/base/source_location.h"
#include "autograd/core/tensor.h"

namespace tapegrad {

namespace detail {
class Walk;

// How many NoGradGuards are alive on this thread.
struct RecordingPauses {
  using Value = int;
  static Value get();
  static void set(Value depth);
};
}  // namespace detail

struct GradientOptions {
  // Record the backward computation itself on the tapes alive on this thread (this one included),
  // so the returned gradients are tensors that can be differentiated again: by this tape (make it
  // persistent, or call gradient again before its single use is spent) or by an outer one
  // (TensorFlow's nested tapes; PyTorch's create_graph). The walked entries are kept, as
  // PyTorch's create_graph keeps the graph. Every op on the path must have a differentiable
  // backward (all of tapegrad's ops do; a custom op does when its backward takes tensors, see
  // autograd/core/custom_op.h); one that has not throws TapeError naming it. The first derivative is
  // the same, bit for bit, as without create_graph.
  bool create_graph = false;
};

class GradientTape {
 public:
  explicit GradientTape(bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  // Backward from a single-element loss (d loss = 1).
  template <class T> void backward(const Tensor<T>& loss);
  // Backward from any output with the given seed (d output = seed, same shape as output). The
  // seed is lent for the call, not copied (docs/tape.md); one passed as an rvalue is moved in, and
  // an input may then take its array.
  template <class T> void backward(const Tensor<T>& output, const xt::xarray<T>& seed);
  template <class T> void backward(const Tensor<T>& output, xt::xarray<T>&& seed);

  // d target / d source for each source (leaves, or intermediates this tape recorded), returned
  // instead of accumulated: no leaf's grad() changes (an intermediate marked retain_grad() keeps
  // this walk's gradient, as in backward and PyTorch) (TensorFlow's tape.gradient, PyTorch's
  // torch.autograd.grad). target must have one element. A source the target does not depend on
  // gets zeros. Hooks run as in backward. Like backward, it uses up a non-persistent tape (not
  // with create_graph, see GradientOptions).
  template <class T>
  std::vector<Tensor<T>> gradient(const Tensor<T>& target, const std::vector<Tensor<T>>& sources,
                                  const GradientOptions& options = {});

  // Number of recorded entries not yet released.
  std::size_t size() const;
  bool persistent() const { return persistent_; }
  // Releases every entry (and what it saved) and makes the tape usable again, e.g. a persistent
  // tape kept across training steps.
  void clear();

  // A tensor an entry read, with its version when the op ran.
  struct Saved {
    std::shared_ptr<NodeBase> node;
    std::uint64_t version;
  };
  struct Entry {
    std::shared_ptr<NodeBase> output;
    const char* op;
    std::function<void()> backward;  // reads the output's gradient, accumulates into inputs
    std::source_location where;       // the op's call site, for anomaly reports
    std::vector<Saved> inputs;        // the op's defined tensor inputs
  };  // output->producer (from next_entry_id()) identifies the entry
  // The entries recorded and not yet released, oldest first: gradcheck names the ops that read a
  // failing input, with their call sites.
  std::vector<std::shared_ptr<const Entry>> entries() const;
  // Used by ops (through detail::make_result): appends to every tape alive on this thread.
  static void record(std::shared_ptr<const Entry> entry);
  // A process-wide unique id, increasing in creation order.
  static std::uint64_t next_entry_id();

  // What the tape owns, shared with this thread's list of live tapes, so that a tape destroyed
  // on another thread never leaves that list pointing at freed memory.
  struct Recorder;

 private:
  template <class T> void check_can_walk(const Tensor<T>& output) const;
  // backward(output, seed), the seed lent (const xt::xarray<T>&) or moved in (xt::xarray<T>&&).
  template <class T, class Seed> void backward_from(const Tensor<T>& output, Seed&& seed);
  // Seeds output and walks; the scope says which leaves receive gradients and how they are carried.
  template <class T, class Seed> void seed_and_walk(const Tensor<T>& output, Seed&& seed, detail::Walk& scope);
  void walk(detail::Walk& scope);

  std::shared_ptr<Recorder> recorder_;
  std::thread::id owner_;
  bool persistent_;
};

// Pauses recording on this thread while alive, on the tapes made before it (a tape made while it
// is alive records).
class NoGradGuard : public ScopedMode<detail::RecordingPauses> {
 public:
  NoGradGuard() : ScopedMode(detail::RecordingPauses::get() + 1) {}
};

// True when a tape is alive on this thread and no NoGradGuard pauses it.
bool is_recording();

}  // namespace tapegrad
