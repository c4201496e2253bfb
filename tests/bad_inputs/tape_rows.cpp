// Rows of docs/bad-inputs.md, section "trust: the tape": in-place edits after the forward, tensors
// outliving their tape, a tape after a backward that threw, a tape used from another thread, a
// StepCapture run inside a run or on two threads.
#include <thread>

#include "autograd/core/custom_op.h"
#include "autograd/ops/functional.h"
#include "autograd/testing/gradcheck.h"
#include "autograd/ops/all.h"
#include "autograd/memory/step_capture.h"
#include "autograd/core/tape.h"
#include "nn/linear.h"
#include "nn/transformer/multi_head_attention.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/support/busy_capture.h"
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

// A captured step that runs another captured step.
void captured_step_inside_captured_step() {
  StepCapture outer, inner;
  outer.run([&] { inner.run([] {}); });
}

// A capture asked to run a step while it runs one on another thread.
void capture_running_on_another_thread() {
  StepCapture capture;
  testing::while_capture_runs_on_another_thread(capture, [&] { capture.run([] {}); });
}

// A hook that hands back a gradient of the wrong shape.
void backward_through_misshaped_hook() {
  const auto x = leaf({2, 3});
  GradientTape tape;
  auto y = exp(x);
  y.register_hook([](const xt::xarray<double>&) { return std::optional<xt::xarray<double>>(xt::xarray<double>{1.0}); });
  tape.backward(sum(y));
}

std::optional<xt::xarray<double>> keep(const xt::xarray<double>&) { return std::nullopt; }

// Under create_graph, a hook on arrays that replaces a gradient: its replacement has no graph.
void create_graph_through_replacing_array_hook() {
  auto x = leaf({2});
  x.register_hook([](const xt::xarray<double>& g) { return std::optional<xt::xarray<double>>(g * 2.0); });
  GradientTape tape;
  tape.gradient(sum(x * x), {x}, {.create_graph = true});
}

// A tensor hook that returns an engaged optional holding an undefined tensor.
void backward_through_hook_returning_undefined() {
  auto x = leaf({2});
  x.register_hook([](const Tensor<double>&) { return std::optional<Tensor<double>>(Tensor<double>()); });
  GradientTape tape;
  tape.backward(sum(x * 2.0));
}

// A custom op whose backward adds into `later`, made after it from its result: by then the walk
// has passed later's op, and the gradient would be dropped.
void custom_op_adding_into_a_newer_intermediate() {
  const auto x = leaf({2});
  GradientTape tape;
  Tensor<double> later;
  const auto op = custom_op("adds_into_later", xt::xarray<double>(x.value()),
                            [&later](const xt::xarray<double>& g, const xt::xarray<double>&) {
                              add_gradient(later, xt::xarray<double>(g));
                            }, x);
  later = op * 2.0;
  tape.backward(sum(later) + sum(op));
}

// A forward hook that replaces an attention module's [1,2,4] output with a [1] tensor.
void attention_with_misshaped_replacement() {
  nn::transformer::MultiHeadAttention<double> mha(4, 2, gen());
  mha.register_forward_hook([](std::span<const Tensor<double>>, const Tensor<double>&) {
    return std::optional<Tensor<double>>(zeros({1}));
  });
  const auto x = zeros({1, 2, 4});
  mha(x, x, x);
}

BAD_INPUT_ROW(Tape, tape_backward_after_inplace_edit, TapeError, (backward_after_inplace_edit()), "'x'",
              "modified in place", "mul")
BAD_INPUT_ROW(Tape, tape_backward_through_ended_tape_intermediate, TapeError, (backward_through_ended_tape_intermediate()),
              "output of exp", "not on this tape")
BAD_INPUT_CRASH_ROW(Tape, tape_backward_after_throwing_backward, TapeError, (backward_after_throwing_backward()),
                    "earlier backward on this tape threw")
BAD_INPUT_ROW(Tape, tape_backward_on_another_thread, TapeError, (backward_on_another_thread()), "thread that created it")

BAD_INPUT_ROW(Tape, step_capture_run_inside_run, TapeError, (captured_step_inside_captured_step()), "StepCapture::run",
              "already running on this thread")
BAD_INPUT_ROW(Tape, step_capture_run_on_another_thread, TapeError, (capture_running_on_another_thread()),
              "StepCapture::run", "running a step on another thread")

BAD_INPUT_ROW(Tape, tensor_register_hook_on_constant, TapeError, (zeros({2}).register_hook(keep)), "register_hook",
              "[2]", "does not require a gradient")
BAD_INPUT_ROW(Tape, tensor_register_empty_hook, ValueError, (leaf({2}).register_hook(GradHook<double>())),
              "register_hook", "empty")
BAD_INPUT_ROW(Tape, tensor_remove_unknown_hook, ValueError, (leaf({2}).remove_hook(12345)), "remove_hook", "[2]",
              "no hook with id 12345")
BAD_INPUT_ROW(Tape, hook_returns_misshaped_gradient, TapeError, (backward_through_misshaped_hook()), "gradient hook 1",
              "[2,3]", "shape [1]")
BAD_INPUT_ROW(Tape, hook_on_arrays_replacing_under_create_graph, TapeError, (create_graph_through_replacing_array_hook()),
              "create_graph", "gradient hook 1", "[2]", "works on arrays", "hook on tensors")
BAD_INPUT_ROW(Tape, hook_returns_undefined_tensor, TapeError, (backward_through_hook_returning_undefined()),
              "gradient hook 1", "[2]", "undefined tensor")
BAD_INPUT_ROW(Tape, custom_op_adds_into_newer_intermediate, TapeError, (custom_op_adding_into_a_newer_intermediate()),
              "backward of adds_into_later", "output of mul_scalar", "already passed", "does not list the tensor")
BAD_INPUT_ROW(Tape, module_remove_unknown_hook, ValueError, (nn::Linear<double>(2, 2, gen()).remove_hook(12345)),
              "Linear", "remove_hook", "12345")
BAD_INPUT_ROW(Tape, module_register_empty_forward_hook, ValueError,
              (nn::Linear<double>(2, 2, gen()).register_forward_hook(nn::Module<double>::ForwardHook())), "Linear",
              "register_forward_hook", "empty hook")
BAD_INPUT_ROW(Tape, module_forward_hook_returns_misshaped_output, ShapeError, (attention_with_misshaped_replacement()),
              "MultiHeadAttention", "forward hook 1", "[1]", "[1,2,4]")
BAD_INPUT_ROW(Tape, tape_gradient_of_many_elements, ShapeError, ([] {
                GradientTape tape;
                const auto x = leaf({2});
                tape.gradient(x * 2.0, {x});
              }()),
              "gradient", "target [2]", "more than one element")
BAD_INPUT_ROW(Tape, tape_gradient_source_not_requiring_grad, TapeError, ([] {
                GradientTape tape;
                const auto x = leaf({2});
                tape.gradient(sum(x * 2.0), {zeros({2})});
              }()),
              "gradient: source 0 [2]", "does not require a gradient")

BAD_INPUT_ROW(Tape, tape_gradient_create_graph_through_array_backward, TapeError, ([] {
                GradientTape tape;
                const auto x = leaf({2});
                const auto y = custom_op<double>("array_op", xt::xarray<double>(x.value()),
                                                 [x](const xt::xarray<double>& g, const xt::xarray<double>&) {
                                                   add_gradient(x, xt::xarray<double>(g));
                                                 }, x);
                tape.gradient(sum(y), {x}, {.create_graph = true});
              }()),
              "create_graph: the backward of array_op runs on plain arrays")
BAD_INPUT_ROW(Tape, jvp_tangent_count_mismatch, ValueError,
              (jvp<double>([](const std::vector<Tensor<double>>& p) { return p[0]; }, {leaf({2})}, {})),
              "jvp: 0 tangents for 1 inputs")
BAD_INPUT_ROW(Tape, jvp_tangent_wrong_shape, ShapeError,
              (jvp<double>([](const std::vector<Tensor<double>>& p) { return p[0]; }, {leaf({2})}, {zeros({3})})),
              "jvp: tangents[0] has shape [3] but input 0 is [2]")
BAD_INPUT_ROW(Tape, vjp_v_wrong_shape, ShapeError,
              (vjp<double>([](const std::vector<Tensor<double>>& p) { return mul(p[0], p[0]); }, {leaf({2})}, zeros({3}))),
              "vjp: v has shape [3] but the function's result is [2]")
BAD_INPUT_ROW(Tape, hessian_vector_product_v_wrong_shape, ShapeError,
              (hessian_vector_product<double>([](const std::vector<Tensor<double>>& p) { return sum(p[0]); }, {leaf({2})},
                                              {zeros({2, 1})})),
              "hessian_vector_product: v[0] has shape [2,1] but input 0 is [2]")
BAD_INPUT_ROW(Tape, functional_unused_input, ValueError,
              (grad<double>([](const std::vector<Tensor<double>>& p) { return sum(p[0]); }, {leaf({2}), leaf({3})})),
              "grad: the function's result does not depend on input 1 [3]", "allow_unused")
BAD_INPUT_ROW(Tape, functional_no_inputs, ValueError,
              (jvp<double>([](const std::vector<Tensor<double>>&) { return zeros({2}); }, {}, {})),
              "jvp: no inputs; give at least one tensor to differentiate with respect to")
BAD_INPUT_ROW(Tape, functional_create_graph_outer_intermediate, TapeError, ([] {
                GradientTape outer;
                const auto h = exp(leaf({2}));
                grad<double>([](const std::vector<Tensor<double>>& p) { return sum(p[0]); }, {h}, {.create_graph = true});
              }()),
              "grad: input 0 [2] is an intermediate", "create_graph", "detach()")
BAD_INPUT_ROW(Tape, gradgradcheck_no_input_requires_grad, ValueError,
              (gradgradcheck([](const std::vector<Tensor<double>>& p) { return p[0]; }, {zeros({2})})),
              "gradgradcheck: no input requires a gradient")

}  // namespace
}  // namespace tapegrad::bad_inputs
