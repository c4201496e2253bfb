// Rows of docs/bad-inputs.md, section "trust: the tape": in-place edits after the forward, tensors
// outliving their tape, a tape after a backward that threw, a tape used from another thread.
#include <thread>

#include "autograd/custom_op.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

// backward of sum(x * x) after x was written in place between the forward and the backward.
void backward_after_inplace_edit() {
  auto x = leaf({2}).set_name("x");
  GradientTape tape;
  const auto loss = sum(x * x);
  x.mutable_value()(0) = 100.0;
  tape.backward(loss);
}

// An intermediate recorded by a tape that has ended, used under a new tape.
void backward_through_ended_tape_intermediate() {
  const auto w = leaf({2});
  Tensor<double> h;
  {
    GradientTape ended;
    h = exp(w);
  }
  GradientTape tape;
  tape.backward(sum(h * w));
}

// A second backward on a tape whose first backward threw (a custom op's closure failed).
void backward_after_throwing_backward() {
  const auto x = leaf({2});
  GradientTape tape(/*persistent=*/true);
  const auto y = custom_op(
      "failing_backward", xt::xarray<double>(x.value()),
      [](const xt::xarray<double>&, const xt::xarray<double>&) { throw ValueError("failing_backward: no gradient"); },
      x);
  const auto loss = sum(y);
  try {
    tape.backward(loss);
  } catch (const ValueError&) {
  }
  tape.backward(loss);
}

// backward on a tape from a thread other than the one that created it.
void backward_on_another_thread() {
  const auto x = leaf({2});
  GradientTape tape;
  const auto loss = sum(x * x);
  std::exception_ptr error;
  std::thread([&] {
    try {
      tape.backward(loss);
    } catch (...) {
      error = std::current_exception();
    }
  }).join();
  if (error) std::rethrow_exception(error);
}

BAD_INPUT_ROW(Tape, tape_backward_after_inplace_edit, TapeError, (backward_after_inplace_edit()), "'x'",
              "modified in place", "mul")
BAD_INPUT_ROW(Tape, tape_backward_through_ended_tape_intermediate, TapeError, (backward_through_ended_tape_intermediate()),
              "output of exp", "not on this tape")
BAD_INPUT_CRASH_ROW(Tape, tape_backward_after_throwing_backward, TapeError, (backward_after_throwing_backward()),
                    "earlier backward on this tape threw")
BAD_INPUT_ROW(Tape, tape_backward_on_another_thread, TapeError, (backward_on_another_thread()), "thread that created it")

}  // namespace
}  // namespace tapegrad::bad_inputs
