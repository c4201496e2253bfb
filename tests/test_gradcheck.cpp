#include <cstring>

#include <gtest/gtest-spi.h>

#include "autograd/core/custom_op.h"
#include "autograd/ops/all.h"
#include "autograd/testing/gradcheck_gtest.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

bool contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

// A user-defined op with the right backward, and one whose backward forgets a factor of 3.
template <class T>
Tensor<T> cube(const Tensor<T>& x, double backward_factor) {
  xt::xarray<T> y = x.value() * x.value() * x.value();
  return custom_op("cube", std::move(y),
                   [x, backward_factor](const xt::xarray<T>& g, const xt::xarray<T>&) {
                     add_gradient(x, xt::xarray<T>(g * static_cast<T>(backward_factor) * x.value() * x.value()));
                   },
                   x);
}

// ---- the full Jacobian and its report ------------------------------------------------------

TEST(Gradcheck, PassesACorrectCustomOp) {
  const auto result = gradcheck([](const Inputs& x) { return cube(x[0], 3.0); }, {random_tensor({2, 3}, 1)});
  EXPECT_TRUE(result.ok) << result.message;
  EXPECT_TRUE(result.message.empty());
  EXPECT_FALSE(result.worst);
}

TEST(Gradcheck, CatchesAWrongBackwardAndSaysWhere) {
  auto x = random_tensor({2, 3}, 1);
  x.set_name("x");
  const auto result = gradcheck([](const Inputs& in) { return cube(in[0], 1.0); }, {x});
  EXPECT_FALSE(result.ok);
  for (const char* fragment : {"input 0", "'x'", "of shape [2,3]", "output element [", "analytic", "numeric",
                               "estimated numeric error", "mismatched elements", "cube (called at",
                               "test_gradcheck.cpp"}) {
    EXPECT_TRUE(contains(result.message, fragment)) << result.message << " lacks " << fragment;
  }
  ASSERT_TRUE(result.worst);
  EXPECT_EQ(result.worst->input, 0u);
  EXPECT_EQ(result.worst->input_index, result.worst->output_index);  // cube is element-wise
  EXPECT_TRUE(contains(result.worst->read_by, "cube (called at"));
}

TEST(Gradcheck, ReportsTheWorstElementNotTheFirst) {
  // The backward is off by 1% at element [0] and by 50% at element [2]: [2] is the one to see.
  const auto off = [](const Inputs& in) {
    const Tensor<double> a = in[0];
    return custom_op("scaled", xt::xarray<double>(a.value() * 2.0),
                     [a](const xt::xarray<double>& g, const xt::xarray<double>&) {
                       xt::xarray<double> d = g * 2.0;
                       d(0) *= 1.01;
                       d(2) *= 1.5;
                       add_gradient(a, std::move(d));
                     },
                     a);
  };
  const auto result = gradcheck(off, {random_tensor({4}, 2)});
  ASSERT_TRUE(result.worst) << result.message;
  EXPECT_EQ(result.worst->input_index, Shape{2});
  EXPECT_EQ(result.worst->output_index, Shape{2});
  EXPECT_NEAR(result.worst->analytic, 3.0, 1e-12);
  EXPECT_NEAR(result.worst->numeric, 2.0, 1e-6);
  EXPECT_TRUE(contains(result.message, "element [2], output element [2]")) << result.message;
  EXPECT_TRUE(contains(result.message, "The worst of 2 mismatched elements")) << result.message;
}

TEST(Gradcheck, EstimatesTheNumericError) {
  // Central differences of x^3 at eps 1e-6 are off by eps^2 = 1e-12 plus rounding (~1e-10): the
  // estimate must be that small, not of the size of the mismatch.
  const auto result = gradcheck([](const Inputs& in) { return cube(in[0], 1.0); }, {random_tensor({3}, 5)});
  ASSERT_TRUE(result.worst);
  EXPECT_LT(result.worst->numeric_error, 1e-8);
  EXPECT_GT(std::abs(result.worst->analytic - result.worst->numeric), 1e-2);
}

TEST(Gradcheck, CatchesAGradientThatIsMissingForOneInput) {
  // The backward forgets b: its analytic Jacobian is zero while the numeric one is not.
  const auto forgets_b = [](const Inputs& x) {
    xt::xarray<double> y = x[0].value() * x[1].value();
    const Tensor<double> a = x[0], b = x[1];
    return custom_op("forgetful_mul", std::move(y),
                     [a, b](const xt::xarray<double>& g, const xt::xarray<double>&) {
                       add_gradient(a, xt::xarray<double>(g * b.value()));
                     },
                     a, b);
  };
  const auto result = gradcheck(forgets_b, {random_tensor({3}, 1), random_tensor({3}, 2)});
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(contains(result.message, "input 1")) << result.message;
  EXPECT_TRUE(contains(result.message, "forgetful_mul (called at")) << result.message;
}

TEST(Gradcheck, ChecksEveryOutputElementOfANonScalarOutput) {
  // Wrong only in the gradient reaching output element [1]: a full Jacobian must see it.
  const auto wrong_second_row = [](const Inputs& x) {
    const Tensor<double> a = x[0];
    return custom_op("odd", xt::xarray<double>(a.value() * 2.0),
                     [a](const xt::xarray<double>& g, const xt::xarray<double>&) {
                       xt::xarray<double> d = g * 2.0;
                       d(1) = g(1);  // should be 2 * g(1)
                       add_gradient(a, std::move(d));
                     },
                     a);
  };
  const auto result = gradcheck(wrong_second_row, {random_tensor({3}, 4)});
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(contains(result.message, "output element [1]")) << result.message;
}

TEST(Gradcheck, InputsWithoutRequiresGradAreHeldConstant) {
  const auto constant = random_tensor({3}, 2, /*requires_grad=*/false);
  EXPECT_TRUE(testing::passes_gradcheck([](const Inputs& x) { return x[0] * x[1]; }, {random_tensor({3}, 1), constant}));
}

TEST(Gradcheck, TolerancesAreTheCallersToSet) {
  // A backward off by 1%: within rtol 0.1, outside PyTorch's default rtol 1e-3.
  const auto slightly_off = [](const Inputs& x) { return cube(x[0], 3.03); };
  const auto x = random_tensor({4}, 3, true, 0.5, 1.0);
  EXPECT_FALSE(gradcheck(slightly_off, {x}).ok);
  EXPECT_TRUE(gradcheck(slightly_off, {x}, {.eps = 1e-6, .atol = 1e-5, .rtol = 0.1}).ok);
}

TEST(Gradcheck, RejectsNonLeafAndUndefinedInputs) {
  const auto identity = [](const Inputs& x) { return x[0]; };
  EXPECT_TRUE(throws_with<ValueError>([&] { gradcheck(identity, {Tensor<double>()}); }, {"gradcheck", "undefined"}));
  const auto x = random_tensor({2}, 1);
  GradientTape tape;
  const auto not_leaf = x * 2.0;
  EXPECT_TRUE(throws_with<ValueError>([&] { gradcheck(identity, {not_leaf}); }, {"gradcheck", "leaf"}));
}

// ---- accumulation and input integrity --------------------------------------------------------

// A cube whose backward assigns the input's gradient instead of adding to it.
Tensor<double> overwriting_cube(const Tensor<double>& x) {
  return custom_op("overwriting_cube", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x](const xt::xarray<double>& g, const xt::xarray<double>&) {
                     x.node()->grad = xt::xarray<double>(g * 3.0 * x.value() * x.value());
                   },
                   x);
}

TEST(GradcheckIntegrity, CatchesABackwardThatOverwritesInsteadOfAccumulating) {
  // Its Jacobian is right: only the second backward shows it.
  auto x = random_tensor({3}, 6);
  x.set_name("x");
  const auto result = gradcheck([](const Inputs& in) { return overwriting_cube(in[0]); }, {x});
  EXPECT_FALSE(result.ok);
  for (const char* fragment : {"second backward did not double", "input 0 ('x')", "add_gradient"}) {
    EXPECT_TRUE(contains(result.message, fragment)) << result.message << " lacks " << fragment;
  }
  EXPECT_FALSE(x.has_grad());  // gradcheck leaves no gradient behind
}

TEST(GradcheckIntegrity, CatchesAForwardThatWritesItsInputInPlace) {
  // A forward that scales its input in place through mutable_value (counted as a version).
  const auto scales_input = [](const Inputs& in) {
    Tensor<double> x = in[0];
    x.mutable_value() *= 1.0;
    return cube(x, 3.0);
  };
  auto x = random_tensor({3}, 7);
  x.set_name("x");
  const auto result = gradcheck(scales_input, {x});
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(contains(result.message, "the forward of the checked function wrote input 0 ('x') in place"))
      << result.message;
}

TEST(GradcheckIntegrity, CatchesABackwardThatChangesItsInputsValue) {
  // The gradient is right, but the backward also nudges the input's value without a version.
  const auto nudges = [](const Inputs& in) {
    const Tensor<double> x = in[0];
    return custom_op("nudging_cube", xt::xarray<double>(x.value() * x.value() * x.value()),
                     [x](const xt::xarray<double>& g, const xt::xarray<double>&) {
                       add_gradient(x, xt::xarray<double>(g * 3.0 * x.value() * x.value()));
                       x.node()->value(1) += 1e-3;
                     },
                     x);
  };
  auto x = random_tensor({3}, 8);
  x.set_name("x");
  const auto result = gradcheck(nudges, {x});
  EXPECT_FALSE(result.ok);
  for (const char* fragment : {"the backward of the checked function changed the value of input 0 ('x')",
                               "element [1]"}) {
    EXPECT_TRUE(contains(result.message, fragment)) << result.message << " lacks " << fragment;
  }
}

// ---- fast mode ------------------------------------------------------------------------------

TEST(GradcheckFastMode, PassesCorrectOpsAndCatchesAWrongOne) {
  const Inputs in{random_tensor({3, 4}, 9), random_tensor({4, 2}, 10)};
  const auto correct = [](const Inputs& x) { return tanh(matmul(x[0], x[1])); };
  EXPECT_TRUE(testing::passes_gradcheck(correct, in, {.fast_mode = true}));
  const auto result = gradcheck([](const Inputs& x) { return cube(x[0], 1.0); }, {random_tensor({2, 3}, 1)},
                                {.fast_mode = true});
  EXPECT_FALSE(result.ok);
  // The projection fails, then the full Jacobian names the worst element.
  for (const char* fragment : {"gradcheck (fast mode): v^T J u for input 0", "The full Jacobian:", "element ["}) {
    EXPECT_TRUE(contains(result.message, fragment)) << result.message << " lacks " << fragment;
  }
  EXPECT_TRUE(result.worst);
}

TEST(GradcheckFastMode, SaysWhenTheFullJacobianIsTooLargeToNameTheWorstElement) {
  // 2^17 elements in and out: the projection is cheap, the Jacobian would need 128 GiB. The
  // backward is 10x off: PyTorch's atol scaling lets an element-wise op on n elements be off by
  // about atol * n per element (see GradcheckOptions::fast_mode), here ~1.3.
  const auto result = gradcheck([](const Inputs& x) { return cube(x[0], 30.0); }, {random_tensor({1 << 17}, 14)},
                                {.fast_mode = true});
  EXPECT_FALSE(result.ok);
  EXPECT_FALSE(result.worst);
  for (const char* fragment : {"gradcheck (fast mode): v^T J u for input 0", "cannot be built", "fit in memory"}) {
    EXPECT_TRUE(contains(result.message, fragment)) << result.message << " lacks " << fragment;
  }
}

TEST(GradcheckFastMode, CallsTheFunctionAConstantNumberOfTimes) {
  // 400 input and 400 output elements: the full check runs the function 2 * 400 + 3 times and
  // walks 400 backwards; fast mode runs it a handful of times and walks 3.
  int calls = 0;
  const auto counted = [&calls](const Inputs& x) {
    ++calls;
    return tanh(x[0] * 2.0);
  };
  const Inputs in{random_tensor({20, 20}, 11)};
  EXPECT_TRUE(testing::passes_gradcheck(counted, in, {.fast_mode = true}));
  EXPECT_LE(calls, 6);
  calls = 0;
  EXPECT_TRUE(testing::passes_gradcheck(counted, in));
  EXPECT_GE(calls, 800);
}

// A cube whose backward is a formula over ops (so it can be differentiated again); with
// `hide_one_x` the formula detaches one x: first order still right, second order wrong.
Tensor<double> graph_cube(const Tensor<double>& x, bool hide_one_x) {
  return custom_op("graph_cube", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x, hide_one_x](const Tensor<double>& grad, const Tensor<double>&) {
                     add_gradient(x, mul(mul(grad, mul(x, hide_one_x ? x.detach() : x)), 3.0));
                   },
                   x);
}

TEST(GradcheckFastMode, AppliesToGradgradcheck) {
  const Inputs in{random_tensor({2, 3}, 12)};
  EXPECT_TRUE(gradgradcheck([](const Inputs& x) { return graph_cube(x[0], false); }, in, {.fast_mode = true}).ok);
  const auto result = gradgradcheck([](const Inputs& x) { return graph_cube(x[0], true); }, in, {.fast_mode = true});
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(contains(result.message, "gradgradcheck")) << result.message;
  EXPECT_TRUE(contains(result.message, "fast mode")) << result.message;
}

// ---- float32 mode ---------------------------------------------------------------------------

using Inputs32 = std::vector<Tensor<float>>;

Tensor<float> random_float(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return Tensor<float>::uniform(shape, gen, -1.0f, 1.0f, true);
}

TEST(GradcheckFloat32, PassesCorrectFloatOps) {
  // Ops whose float32 rounding would fail PyTorch's fixed tolerances at eps 1e-6.
  EXPECT_GRADCHECK([](const Inputs32& x) { return cube(x[0], 3.0); }, {random_float({2, 3}, 1)});
  EXPECT_GRADCHECK([](const Inputs32& x) { return softmax(matmul(x[0], x[1]), -1); },
                   {random_float({3, 4}, 2), random_float({4, 5}, 3)});
  EXPECT_GRADCHECK([](const Inputs32& x) { return layer_norm(tanh(x[0]), {6}, x[1], x[2]); },
                   {random_float({2, 6}, 4), random_float({6}, 5), random_float({6}, 6)});
  EXPECT_GRADCHECK([](const Inputs32& x) { return sum(exp(x[0]) * x[1]); }, {random_float({8}, 7), random_float({8}, 8)});
}

TEST(GradcheckFloat32, FailsADerivativeOffByOnePercent) {
  const auto result = gradcheck([](const Inputs32& x) { return cube(x[0], 3.03); }, {random_float({2, 3}, 1)});
  EXPECT_FALSE(result.ok);
  ASSERT_TRUE(result.worst);
  // The worst element is off by 1% of a number of order one; the error estimate is far below.
  EXPECT_LT(result.worst->numeric_error, 1e-3) << result.message;
  EXPECT_TRUE(contains(result.message, "float32 mode")) << result.message;
}

TEST(GradcheckFloat32, AFunctionWithJumpsBetweenStepsCannotWidenTheToleranceToPassAWrongDerivative) {
  // x^3 plus a deterministic jitter of 1e-3 that jumps with every bit of x, and a backward 30%
  // off: the spread of the extrapolations is large, and must not become the tolerance.
  const auto jittery_cube = [](const Inputs32& in) {
    const Tensor<float> x = in[0];
    xt::xarray<float> y = x.value() * x.value() * x.value();
    for (std::size_t e = 0; e < y.size(); ++e) {
      std::uint32_t bits;
      std::memcpy(&bits, x.value().data() + e, sizeof bits);
      y.data()[e] += 1e-3f * static_cast<float>((bits * 2654435761u) % 1000u) / 1000.0f;
    }
    return custom_op("jittery_cube", std::move(y),
                     [x](const xt::xarray<float>& g, const xt::xarray<float>&) {
                       add_gradient(x, xt::xarray<float>(g * 3.9f * x.value() * x.value()));
                     },
                     x);
  };
  const auto result = gradcheck(jittery_cube, {random_float({2, 3}, 9)});
  EXPECT_FALSE(result.ok) << "a derivative 30% off passed";
}

// ---- functions gradcheck cannot judge, and empty Jacobians -----------------------------------

TEST(GradcheckDeterminism, ANoisyFunctionIsRefusedInBothPrecisions) {
  // Noise drawn anew on every call, and a backward 30% off: finite differences of the noise
  // would decide the verdict (float32 mode used to pass it).
  Generator noise(5);
  const auto noisy32 = [&noise](const Inputs32& in) {
    return cube(in[0], 3.9) + Tensor<float>::uniform(in[0].shape(), noise, -1e-2f, 1e-2f);
  };
  EXPECT_TRUE(throws_with<ValueError>([&] { gradcheck(noisy32, {random_float({2, 3}, 1)}); },
                                      {"gradcheck: the function is not deterministic", "output element ["}));
  const auto noisy64 = [&noise](const Inputs& in) {
    return cube(in[0], 3.0) + Tensor<double>::uniform(in[0].shape(), noise, -1e-9, 1e-9);
  };
  EXPECT_TRUE(throws_with<ValueError>([&] { gradcheck(noisy64, {random_tensor({2, 3}, 1)}); },
                                      {"gradcheck: the function is not deterministic"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { gradcheck(noisy64, {random_tensor({2, 3}, 1)}, {.fast_mode = true}); },
                                      {"gradcheck: the function is not deterministic"}));
}

// A function whose result has 3 elements when x[0] is above 0.25 and 2 otherwise.
template <class T>
Tensor<T> shape_follows_value(const std::vector<Tensor<T>>& in) {
  return in[0].value()(0) > T(0.25) ? in[0] * T(2) : slice(in[0], 0, 0, 2) * T(2);
}

TEST(GradcheckShapes, AResultWhoseShapeChangesUnderAStepIsNamedWithBothShapes) {
  const Tensor<double> x(xt::xarray<double>{0.25, 0.5, 0.75}, true);
  EXPECT_TRUE(throws_with<ShapeError>([&] { gradcheck(shape_follows_value<double>, {x}); },
                                      {"gradcheck: the function's result has shape [3] with input 0 moved by a "
                                       "finite-difference step but [2] at the inputs as given"}));
  const Tensor<float> x32(xt::xarray<float>{0.25f, 0.5f, 0.75f}, true);
  EXPECT_TRUE(throws_with<ShapeError>([&] { gradcheck(shape_follows_value<float>, {x32}); },
                                      {"gradcheck: the function's result has shape [3]", "but [2]"}));
  EXPECT_EQ(x.value()(0), 0.25);  // put back after the refusal
}

TEST(GradcheckEmpty, AnInputWithNoElementsHasNothingToCompareAndPasses) {
  const auto f = [](const Inputs& in) { return cube(in[1], 3.0) * (sum(in[0]) + 1.0); };
  EXPECT_GRADCHECK(f, {random_tensor({0}, 1), random_tensor({2}, 2)});
  EXPECT_GRADCHECK(f, {random_tensor({0}, 1), random_tensor({2}, 2)}, {.fast_mode = true});
  EXPECT_GRADCHECK([](const Inputs32& in) { return cube(in[0], 3.0); }, {random_float({0, 3}, 3)});
}

TEST(GradcheckEmpty, GradgradcheckOfAnEmptyResultPasses) {
  // J^T v with v of no elements is identically 0.
  EXPECT_GRADGRADCHECK([](const Inputs& in) { return slice(graph_cube(in[0], false), 0, 0, 0); },
                       {random_tensor({3}, 4)});
}

// ---- the GoogleTest macros -------------------------------------------------------------------

TEST(GradcheckMacros, PassAndFailWithGradchecksMessage) {
  const Inputs in{random_tensor({2, 3}, 13)};
  const auto right = [](const Inputs& x) { return graph_cube(x[0], false); };
  const auto wrong = [](const Inputs& x) { return cube(x[0], 1.0); };
  EXPECT_GRADCHECK(right, in);
  ASSERT_GRADCHECK(right, in, {.fast_mode = true});
  EXPECT_GRADGRADCHECK(right, in);
  EXPECT_NONFATAL_FAILURE(EXPECT_GRADCHECK(wrong, in), "gradcheck: Jacobian mismatch for input 0");
  EXPECT_NONFATAL_FAILURE(EXPECT_GRADCHECK(wrong, in, {.rtol = 1e-2}), "rtol 0.01");
  EXPECT_NONFATAL_FAILURE(EXPECT_GRADGRADCHECK([](const Inputs& x) { return graph_cube(x[0], true); }, in),
                          "gradgradcheck");
}

}  // namespace
}  // namespace tapegrad
