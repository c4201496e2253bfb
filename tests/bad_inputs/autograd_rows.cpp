// Rows of docs/bad-inputs.md, section "autograd": Tensor, GradientTape, gradcheck, custom_op,
// Generator, set_num_threads.
#include "autograd/core/custom_op.h"
#include "autograd/testing/gradcheck.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

// A custom op whose backward hands its input a gradient of the wrong shape.
Tensor<double> wrong_gradient_op(const Tensor<double>& x) {
  return custom_op(
      "wrong_gradient_op", xt::xarray<double>(x.value()),
      [x](const xt::xarray<double>&, const xt::xarray<double>&) {
        add_gradient(x, xt::xarray<double>(xt::zeros<double>({3})));
      },
      x);
}

// backward on `output(leaf)` under a fresh tape, optionally twice.
template <class Fn>
void backward_of(Fn output, int times = 1) {
  GradientTape tape;
  const auto y = output(leaf({2, 3}));
  for (int i = 0; i < times; ++i) tape.backward(y);
}

Tensor<double> identity(const std::vector<Tensor<double>>& x) { return x[0] * 1.0; }
Tensor<float> identity32(const std::vector<Tensor<float>>& x) { return x[0] * 1.0f; }

// ---- Tensor -------------------------------------------------------------------------------
BAD_INPUT_ROW(Autograd, tensor_item_of_many_elements, ValueError, (zeros({2, 2}).item()), "item", "[2,2]", "4 elements")
BAD_INPUT_ROW(Autograd, tensor_size_axis_out_of_range, ValueError, (zeros({2, 3}).size(2)), "size", "axis 2", "[2,3]")
BAD_INPUT_ROW(Autograd, tensor_size_negative_axis_out_of_range, ValueError, (zeros({2, 3}).size(-3)), "size", "axis -3",
              "[2,3]")
BAD_INPUT_ROW(Autograd, tensor_grad_before_backward, TapeError, (leaf({2}).grad()), "grad", "[2]", "no gradient")
BAD_INPUT_ROW(Autograd, tensor_set_requires_grad_on_op_output, TapeError, ([] {
                GradientTape tape;
                (leaf({2}) * 2.0).set_requires_grad(false);
              }()),
              "set_requires_grad", "mul")
BAD_INPUT_ROW(Autograd, tensor_value_after_moved_into_view, TapeError, ([] {
                Tensor<double> t = leaf({2, 3}) * 2.0;
                const Tensor<double> v = view(std::move(t), {6});
                (void)t.value();  // NOLINT(bugprone-use-after-move): the misuse under test
              }()),
              "Tensor::value", "[2,3]", "std::move")
BAD_INPUT_ROW(Autograd, tensor_undefined_shape, ValueError, (undefined().shape()), "shape", "undefined tensor")
BAD_INPUT_ROW(Autograd, tensor_undefined_value, ValueError, (undefined().value()), "value", "undefined tensor")
BAD_INPUT_ROW(Autograd, tensor_undefined_item, ValueError, (undefined().item()), "item", "undefined tensor")
BAD_INPUT_ROW(Autograd, tensor_undefined_set_requires_grad, ValueError, (undefined().set_requires_grad(true)),
              "set_requires_grad", "undefined tensor")
BAD_INPUT_ROW(Autograd, tensor_undefined_detach, ValueError, (undefined().detach()), "detach", "undefined tensor")
BAD_INPUT_ROW(Autograd, tensor_undefined_to, ValueError, (undefined().to<float>()), "cast", "'a'", "undefined tensor")
BAD_INPUT_ROW(Autograd, tensor_zeros_negative_size, ValueError,
              (Tensor<double>::zeros({2, static_cast<std::size_t>(-1)})), "zeros", "[2,18446744073709551615]",
              "fit in memory")
BAD_INPUT_ROW(Autograd, tensor_full_huge_shape, ValueError, (Tensor<float>::full({1 << 20, 1 << 20, 1 << 20}, 1.0f)),
              "full", "[1048576,1048576,1048576]", "fit in memory")
BAD_INPUT_ROW(Autograd, tensor_arange_zero_step, ValueError, (Tensor<double>::arange(0, 1, 0)), "arange", "step")
BAD_INPUT_ROW(Autograd, tensor_arange_infinite_stop, ValueError, (Tensor<double>::arange(0, inf)), "arange", "stop",
              "inf")
BAD_INPUT_ROW(Autograd, tensor_arange_nan_start, ValueError, (Tensor<double>::arange(nan, 3)), "arange", "start", "nan")
BAD_INPUT_ROW(Autograd, tensor_arange_step_away_from_stop, ValueError, (Tensor<double>::arange(0, 5, -1)), "arange",
              "step -1", "stop 5")
BAD_INPUT_ROW(Autograd, tensor_uniform_empty_range, ValueError, (Tensor<double>::uniform({2}, gen(), 1, 1)), "uniform",
              "low", "[1, 1)")
BAD_INPUT_ROW(Autograd, tensor_uniform_nan_bound, ValueError, (Tensor<double>::uniform({2}, gen(), nan, 1)), "uniform",
              "nan")
BAD_INPUT_ROW(Autograd, tensor_uniform_infinite_bound, ValueError, (Tensor<double>::uniform({2}, gen(), 0, inf)),
              "uniform", "inf")
BAD_INPUT_ROW(Autograd, tensor_randn_negative_std, ValueError, (Tensor<double>::randn({2}, gen(), 0, -1)), "randn",
              "std", "-1")
BAD_INPUT_ROW(Autograd, tensor_randn_nan_mean, ValueError, (Tensor<double>::randn({2}, gen(), nan, 1)), "randn", "mean",
              "nan")
BAD_INPUT_ROW(Autograd, set_num_threads_negative_int, ValueError, (set_num_threads(static_cast<std::size_t>(-1))),
              "set_num_threads", "18446744073709551615")
BAD_INPUT_ROW(Autograd, generator_randint_empty_range, ValueError, (gen().randint(5, 5)), "randint", "[5, 5)")

// ---- GradientTape / NoGradGuard -------------------------------------------------------------
BAD_INPUT_ROW(Autograd, tape_backward_non_scalar, ShapeError, (backward_of([](auto x) { return x * 2.0; })), "backward",
              "[2,3]", "more than one element")
BAD_INPUT_ROW(Autograd, tape_backward_twice, TapeError, (backward_of([](auto x) { return sum(x); }, 2)), "backward",
              "already used", "persistent")
BAD_INPUT_ROW(Autograd, tape_backward_seed_shape, ShapeError, ([] {
                GradientTape tape;
                tape.backward(leaf({2}) * 2.0, xt::xarray<double>(xt::ones<double>({3})));
              }()),
              "backward", "seed of shape [3]", "[2]")
BAD_INPUT_ROW(Autograd, tape_backward_not_recorded_by_this_tape, TapeError, ([] {
                const auto y = [] {
                  GradientTape other;
                  return sum(leaf({2}));
                }();
                GradientTape tape;
                tape.backward(y);
              }()),
              "backward", "sum", "not recorded by this tape")
BAD_INPUT_ROW(Autograd, tape_backward_without_gradient, TapeError, ([] {
                GradientTape tape;
                tape.backward(sum(zeros({2})));
              }()),
              "backward", "does not require a gradient")
BAD_INPUT_ROW(Autograd, tape_backward_under_no_grad_guard, TapeError, ([] {
                GradientTape tape;
                NoGradGuard guard;
                tape.backward(sum(leaf({2})));
              }()),
              "backward", "does not require a gradient")
BAD_INPUT_ROW(Autograd, tape_backward_undefined, ValueError, ([] {
                GradientTape tape;
                tape.backward(undefined());
              }()),
              "backward", "undefined tensor")

// ---- custom_op / gradcheck -----------------------------------------------------------------
BAD_INPUT_ROW(Autograd, custom_op_backward_wrong_gradient_shape, TapeError, ([] {
                GradientTape tape;
                tape.backward(sum(wrong_gradient_op(leaf({2}))));
              }()),
              "wrong_gradient_op", "gradient of shape [3]", "[2]")
BAD_INPUT_ROW(Autograd, gradcheck_undefined_input, ValueError, (gradcheck(identity, {undefined()})), "gradcheck",
              "input 0", "undefined")
BAD_INPUT_ROW(Autograd, gradcheck_op_output_as_input, ValueError, ([] {
                GradientTape tape;
                gradcheck(identity, {leaf({2}) * 1.0});
              }()),
              "gradcheck", "input 0", "output of an op")
BAD_INPUT_ROW(Autograd, gradcheck_no_input_requires_grad, ValueError, (gradcheck(identity, {zeros({2})})), "gradcheck",
              "no input requires a gradient")
BAD_INPUT_ROW(Autograd, gradcheck_function_returns_undefined, ValueError,
              (gradcheck([](const auto&) { return undefined(); }, {leaf({2})})), "gradcheck", "undefined tensor")
BAD_INPUT_ROW(Autograd, gradcheck_zero_eps, ValueError, (gradcheck(identity, {leaf({2})}, {.eps = 0.0})), "gradcheck",
              "eps", "0")
BAD_INPUT_ROW(Autograd, gradcheck_negative_atol, ValueError, (gradcheck(identity, {leaf({2})}, {.atol = -1.0})),
              "gradcheck", "atol", "-1")
BAD_INPUT_ROW(Autograd, gradcheck_float32_no_input_requires_grad, ValueError,
              (gradcheck(identity32, {Tensor<float>::zeros({2})})), "gradcheck", "no input requires a gradient")
BAD_INPUT_ROW(Autograd, gradcheck_float32_zero_tolerance_factor, ValueError,
              (gradcheck(identity32, {Tensor<float>::ones({2}, true)}, {.tolerance_factor = 0.0})), "gradcheck",
              "tolerance_factor", "0")
BAD_INPUT_ROW(Autograd, gradcheck_float32_nan_tolerance_factor, ValueError,
              (gradcheck(identity32, {Tensor<float>::ones({2}, true)}, {.tolerance_factor = nan})), "gradcheck",
              "tolerance_factor", "nan")
BAD_INPUT_ROW(Autograd, gradcheck_nan_rtol, ValueError, (gradcheck(identity, {leaf({2})}, {.rtol = nan})), "gradcheck",
              "rtol", "nan")
BAD_INPUT_ROW(Autograd, gradcheck_not_deterministic, ValueError, ([] {
                Generator noise(1);
                const auto noisy = [&noise](const std::vector<Tensor<double>>& x) {
                  return x[0] + Tensor<double>::uniform({2}, noise);
                };
                gradcheck(noisy, {leaf({2})});
              }()),
              "gradcheck: the function is not deterministic")
BAD_INPUT_ROW(Autograd, gradcheck_result_shape_changes, ShapeError,
              (gradcheck([](const std::vector<Tensor<double>>& x) { return x[0].value()(0) > 1.0 ? x[0] * 1.0 : sum(x[0]); },
                         {leaf({2})})),
              "gradcheck: the function's result has shape [2] with input 0 moved by a finite-difference step but [] "
              "at the inputs as given")

}  // namespace
}  // namespace tapegrad::bad_inputs
