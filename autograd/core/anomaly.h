#pragma once
// Anomaly mode: find the op that first produced a NaN or an infinity.
//
//   DetectAnomalyGuard anomaly;            // or set_detect_anomaly(true)
//   auto y = log(x);                       // x holds a 0: throws AnomalyError
//   // "anomaly mode: log (called at train.cpp:42) produced -inf in its output of shape [2,3]
//   //  at index [0,1] (1 of 6 elements not finite)"
//
// What is reported:
// - Forward: a NaN in any op's output, always. An infinity only where the op created it, i.e. none
//   of its tensor inputs held one. Infinities that are there by design pass: masked_fill(scores,
//   mask, -inf) (its fill value counts as an input), and everything that merely carries such an
//   infinity on (add, reshape, max, log_softmax of a fully masked row, which is -inf by
//   definition). log(0), 1/0, x / 0.0 and exp(1000) throw.
// - Backward: every gradient a backward closure adds into an input is checked (NaN or infinity;
//   no gradient is infinite by design). The error names the op whose backward produced it, where
//   that op was called, and the input the gradient was for. The seed of backward is checked too.
// "Where" is the op function's call site, captured by its trailing defaulted CallSite parameter
// (autograd/base/call_site.h): a user's own line for a direct call or an operator, an nn module's .cpp
// line for ops the module calls, custom_op's caller for a custom op.
//
// The switch is per thread, like GradientTape and NoGradGuard: a thread debugging its model with
// anomaly mode on neither slows down nor throws in another thread training its own model, and the
// flag needs no synchronisation. (PyTorch's switch is process-wide.) Ops run on the thread that
// calls them (TBB workers only run kernels), so the flag of the calling thread is the one that
// counts; a program that trains on a worker thread turns it on there.
//
// Off (the default) it costs a predictable branch in should_record, make_result and accumulate,
// and two thread-local stores per backward entry: no scans, no allocations (its instruction
// count: bench/RESULTS.md, section "Anomaly mode off"). On, every op's output and every gradient
// is scanned once.
#include "autograd/base/scoped_mode.h"
#include "autograd/base/source_location.h"

#include "autograd/core/tensor.h"

namespace tapegrad {

namespace detail {
extern constinit thread_local bool anomaly_mode;
}  // namespace detail

inline bool is_anomaly_enabled() { return detail::anomaly_mode; }
inline void set_detect_anomaly(bool enabled) { detail::anomaly_mode = enabled; }

namespace detail {
struct AnomalyMode {
  using Value = bool;
  static Value get() { return is_anomaly_enabled(); }
  static void set(Value enabled) { set_detect_anomaly(enabled); }
};
}  // namespace detail

// Sets anomaly mode on this thread for its lifetime and restores the previous state after.
class DetectAnomalyGuard : public ScopedMode<detail::AnomalyMode> {
 public:
  explicit DetectAnomalyGuard(bool enabled = true) : ScopedMode(enabled) {}
};

namespace detail {

template <class T> bool holds_inf(const xt::xarray<T>& values);

// Throws AnomalyError when `value`, the output of `op` called at `where`, holds a NaN, or an
// infinity while none of the op's inputs held one.
template <class T>
void check_forward(const char* op, const std::source_location& where, const xt::xarray<T>& value, bool inputs_hold_inf);

// Throws AnomalyError when `grad`, a gradient contribution for `input`, holds a NaN or an
// infinity; names the op whose backward is running (BackwardSite) or, outside a walk, `context`.
template <class T>
void check_gradient(const Node<T>& input, const xt::xarray<T>& grad, const char* context = nullptr);

// Marks, for anomaly reports, whose backward runs on this thread while alive (GradientTape's walk
// makes one per entry: two thread-local stores, whether anomaly mode is on or not).
class BackwardSite {
 public:
  BackwardSite(const char* op, const std::source_location& where) : op(op), where(where), previous_(current) {
    current = this;
  }
  ~BackwardSite() { current = previous_; }
  BackwardSite(const BackwardSite&) = delete;
  BackwardSite& operator=(const BackwardSite&) = delete;

  static constinit thread_local const BackwardSite* current;  // null outside a walk
  const char* op;
  std::source_location where;

 private:
  const BackwardSite* previous_;
};

}  // namespace detail

}  // namespace tapegrad
