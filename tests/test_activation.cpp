#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <vector>

#include <xtensor/xmath.hpp>

#include "autograd/ops/activation.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Unary = std::function<Tensor<double>(const Tensor<double>&)>;

const std::vector<Shape> kActivationShapes = {{}, {5}, {2, 3}, {2, 1, 3}};

const std::vector<std::pair<const char*, Unary>> kActivations = {
    {"relu", [](const auto& a) { return relu(a); }},
    {"sigmoid", [](const auto& a) { return sigmoid(a); }},
    {"tanh", [](const auto& a) { return tanh(a); }},
    {"gelu", [](const auto& a) { return gelu(a); }},
    {"gelu_tanh", [](const auto& a) { return gelu(a, GeluApproximation::Tanh); }},
};

// A leaf whose values lie in [0.1, 3] in magnitude, with mixed signs: both sides of relu's kink,
// never within a finite-difference step of it.
Tensor<double> away_from_zero(const Shape& shape, std::uint64_t seed) {
  xt::xarray<double> v = random_tensor(shape, seed, false, 0.1, 3.0).value();
  for (std::size_t i = 0; i < v.size(); i += 2) v.data()[i] = -v.data()[i];
  return Tensor<double>(std::move(v), true);
}

// Applies a plain scalar formula to every element: the independent reference for the forward.
xt::xarray<double> apply(const xt::xarray<double>& x, double (*f)(double)) {
  xt::xarray<double> out = x;
  for (auto& v : out) v = f(v);
  return out;
}

double ref_relu(double x) { return x > 0.0 ? x : 0.0; }
double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double ref_tanh(double x) { return std::tanh(x); }
double ref_gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double ref_gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

TEST(Activation, ForwardMatchesScalarFormulas) {
  const std::vector<double (*)(double)> refs = {ref_relu, ref_sigmoid, ref_tanh, ref_gelu, ref_gelu_tanh};
  const auto a = random_tensor({3, 4}, 21, false, -4.0, 4.0);
  for (std::size_t i = 0; i < kActivations.size(); ++i) {
    SCOPED_TRACE(kActivations[i].first);
    EXPECT_LT(max_abs_diff(kActivations[i].second(a).value(), apply(a.value(), refs[i])), 1e-14);
  }
}

TEST(Activation, HandComputedValues) {
  const Tensor<double> a(xt::xarray<double>{-1.0, 0.0, 2.0});
  EXPECT_EQ(relu(a).value(), (xt::xarray<double>{0.0, 0.0, 2.0}));
  EXPECT_DOUBLE_EQ(sigmoid(a).value()(1), 0.5);
  EXPECT_DOUBLE_EQ(tanh(a).value()(1), 0.0);
  // PyTorch: F.gelu(torch.tensor(1.0, dtype=torch.float64)) and with approximate="tanh".
  const Tensor<double> one(xt::xarray<double>{1.0});
  EXPECT_NEAR(gelu(one).item(), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(gelu(one, GeluApproximation::Tanh).item(), 0.8411919906082768, 1e-15);
}

TEST(Activation, SigmoidIsFiniteForLargeInputs) {
  const auto y = sigmoid(Tensor<double>(xt::xarray<double>{-1000.0, 1000.0})).value();
  EXPECT_EQ(y, (xt::xarray<double>{0.0, 1.0}));
  const auto yf = sigmoid(Tensor<float>(xt::xarray<float>{-200.0f, 200.0f})).value();
  EXPECT_EQ(yf, (xt::xarray<float>{0.0f, 1.0f}));
}

TEST(Activation, ReluGradientIsZeroAtZero) {
  const Tensor<double> a(xt::xarray<double>{-1.0, 0.0, 2.0}, true);
  GradientTape tape;
  tape.backward(relu(a), xt::xarray<double>{5.0, 5.0, 5.0});
  EXPECT_EQ(a.grad(), (xt::xarray<double>{0.0, 0.0, 5.0}));
}

// Relu's inputs repeated over 67 elements: whole batches at every SIMD width, then a tail.
template <class T>
xt::xarray<T> tiled(const std::vector<T>& pattern) {
  xt::xarray<T> out = xt::xarray<T>::from_shape({67});
  for (std::size_t i = 0; i < out.size(); ++i) out(i) = pattern[i % pattern.size()];
  return out;
}

TEST(Activation, ReluPropagatesNaNAndGivesPlusZeroAtMinusZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const xt::xarray<double> y = relu(Tensor<double>(tiled<double>({nan, -0.0, -1.0, 2.0}))).value();
  for (std::size_t i = 0; i < y.size(); i += 4) {
    EXPECT_TRUE(std::isnan(y(i))) << i;
    EXPECT_EQ(y(i + 1), 0.0) << i;
    EXPECT_FALSE(std::signbit(y(i + 1))) << i;  // PyTorch's relu(-0.) is 0.
    if (i + 2 < y.size()) {
      EXPECT_EQ(y(i + 2), 0.0) << i;
    }
    if (i + 3 < y.size()) {
      EXPECT_EQ(y(i + 3), 2.0) << i;
    }
  }
}

// The gradient of relu at a NaN input, in T: PyTorch 1.13 passes it through (its
// threshold_backward keeps the gradient where !(x <= 0)).
template <class T>
void expect_relu_gradient_at_nan() {
  const Tensor<T> a(tiled<T>({std::numeric_limits<T>::quiet_NaN(), T(-1), T(0), T(2)}), true);
  GradientTape tape;
  tape.backward(relu(a), tiled<T>({T(3)}));
  // torch.relu(x).backward(torch.full((4,), 3.)) for x = [nan, -1, 0, 2], float32 and float64,
  // gives x.grad = [3, 0, 0, 3]; here that pattern over batches and a tail.
  EXPECT_EQ(a.grad(), tiled<T>({T(3), T(0), T(0), T(3)}));
}

TEST(Activation, ReluPassesTheGradientAtNaNAsPyTorch) {
  expect_relu_gradient_at_nan<float>();
  expect_relu_gradient_at_nan<double>();
}

TEST(Activation, GradcheckOverShapes) {
  for (const auto& [name, op] : kActivations) {
    for (const Shape& shape : kActivationShapes) {
      SCOPED_TRACE(std::string(name) + " " + format_shape(shape));
      EXPECT_TRUE(passes_gradcheck([op = op](const Inputs& x) { return op(x[0]); }, {away_from_zero(shape, 22)}));
    }
  }
}

TEST(Activation, GeluGradcheckAcrossItsCurve) {
  // Where the derivative dips below 0 (x near -0.75) and saturates (|x| > 3).
  const Tensor<double> x(xt::xarray<double>{-5.0, -2.0, -0.75, -0.3, 0.2, 0.9, 4.0}, true);
  EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return gelu(v[0]); }, {x}));
  EXPECT_TRUE(passes_gradcheck([](const Inputs& v) { return gelu(v[0], GeluApproximation::Tanh); }, {x}));
}

TEST(Activation, FloatMatchesDouble) {
  // Inputs exactly representable in float, so only the float arithmetic differs.
  const auto a = random_tensor({2, 3}, 23, false, -3.0, 3.0).to<float>().to<double>();
  const Tensor<float> af = a.to<float>();
  const auto widen = [](const Tensor<float>& t) { return xt::xarray<double>(xt::cast<double>(t.value())); };
  EXPECT_LT(max_abs_diff(widen(relu(af)), relu(a).value()), 1e-6);
  EXPECT_LT(max_abs_diff(widen(sigmoid(af)), sigmoid(a).value()), 1e-6);
  EXPECT_LT(max_abs_diff(widen(tanh(af)), tanh(a).value()), 1e-6);
  EXPECT_LT(max_abs_diff(widen(gelu(af)), gelu(a).value()), 1e-6);
  EXPECT_LT(max_abs_diff(widen(gelu(af, GeluApproximation::Tanh)), gelu(a, GeluApproximation::Tanh).value()), 1e-6);
}

TEST(Activation, UndefinedInputThrowsNamingOp) {
  EXPECT_TRUE(throws_with<ValueError>([] { relu(Tensor<double>()); }, {"relu", "undefined"}));
  EXPECT_TRUE(throws_with<ValueError>([] { sigmoid(Tensor<double>()); }, {"sigmoid", "undefined"}));
  EXPECT_TRUE(throws_with<ValueError>([] { tanh(Tensor<double>()); }, {"tanh", "undefined"}));
  EXPECT_TRUE(throws_with<ValueError>([] { gelu(Tensor<double>()); }, {"gelu", "undefined"}));
}

// ---- softplus ---------------------------------------------------------------------------------
TEST(Softplus, ValuesAndGradientInBothRegionsAsPyTorch) {
  // PyTorch 1.13: beta x = 20 is still soft (log1p(exp(20)) = 20 + 2.06e-9); above it, x itself.
  GradientTape tape;
  const Tensor<double> x(xt::xarray<double>{-30.0, 0.0, 20.0, 21.0}, true);
  const auto y = softplus(x);
  EXPECT_DOUBLE_EQ(y.value()(0), 9.357622968839737e-14);  // log1p(exp(-30))
  EXPECT_DOUBLE_EQ(y.value()(1), std::log(2.0));
  EXPECT_DOUBLE_EQ(y.value()(2), 20.000000002061153);
  EXPECT_EQ(y.value()(3), 21.0);
  tape.backward(y, xt::xarray<double>(xt::ones<double>({4})));
  EXPECT_DOUBLE_EQ(x.grad()(0), 9.3576229688393e-14);  // sigmoid(-30)
  EXPECT_EQ(x.grad()(1), 0.5);
  EXPECT_DOUBLE_EQ(x.grad()(2), 0.9999999979388464);  // sigmoid(20)
  EXPECT_EQ(x.grad()(3), 1.0);
}

TEST(Softplus, BetaAndThreshold) {
  // beta 2, threshold 10: 6 * 2 > 10 is linear; softplus(1) = log(1 + e^2) / 2, slope sigmoid(2).
  GradientTape tape;
  const Tensor<double> x(xt::xarray<double>{1.0, 6.0}, true);
  const auto y = softplus(x, 2.0, 10.0);
  EXPECT_DOUBLE_EQ(y.value()(0), std::log1p(std::exp(2.0)) / 2.0);
  EXPECT_EQ(y.value()(1), 6.0);
  tape.backward(y, xt::xarray<double>(xt::ones<double>({2})));
  EXPECT_DOUBLE_EQ(x.grad()(0), 1.0 / (1.0 + std::exp(-2.0)));
  EXPECT_EQ(x.grad()(1), 1.0);
  // A negative beta (PyTorch: -1.3133 at x = -1, beta = -1): log1p(e^1) / -1.
  EXPECT_DOUBLE_EQ(softplus(Tensor<double>(xt::xarray<double>{-1.0}), -1.0).value()(0), -std::log1p(std::exp(1.0)));
}

TEST(Softplus, Gradcheck) {
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return softplus(x[0], 1.5, 2.0); },
                               {random_tensor({3, 4}, 61, true, -3.0, 3.0)}));
}

TEST(Softplus, BadInputs) {
  const auto x = Tensor<double>::zeros({2});
  EXPECT_TRUE(throws_with<ValueError>([&] { softplus(x, 0.0); }, {"softplus", "beta = 0", "[2]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { softplus(x, 1.0, std::nan("")); }, {"softplus", "threshold = nan", "[2]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { softplus(Tensor<double>()); }, {"softplus", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// relu is linear where differentiable: composed with a product so the second derivative is not
// zero.

TAPEGRAD_OP_SPEC(relu) {
  OpSpec s("relu", "activation");
  s.samples = {
      {"relu", [](const auto& x) { return relu(x[0]); }, [] { return V{leaf({2, 3}, 345)}; }},
      OpCase("relu_times_input", [](const auto& x) { return mul(relu(x[0]), x[0]); }, [] { return V{leaf({3, 4}, 302)}; }).at_scale([] { return V{leaf({5, 97, 131}, 902)}; }),
      {"relu_of_broadcast_product", [](const auto& x) { return relu(mul(x[0], x[1])); },
       [] { return V{leaf({2, 1, 3}, 303), leaf({4, 1}, 304)}; }},
  };
  s.errors = {
      error_input<ValueError>("relu_undefined", "`relu`", "undefined a",
                  [] { return relu(bad_inputs::undefined()); },
                  {"relu", "'a'", "undefined"}),
  };
  s.pytorch = {
      {"nn.functional.relu", unary([](const T& x) { return relu(x); })},
  };
  return s;
}

TAPEGRAD_OP_SPEC(sigmoid) {
  OpSpec s("sigmoid", "activation");
  s.samples = {
      OpCase("sigmoid", [](const auto& x) { return sigmoid(x[0]); }, [] { return V{leaf({2, 3}, 305, -4.0, 4.0)}; }).at_scale([] { return V{leaf({5, 97, 131}, 903, -4.0, 4.0)}; }),
      {"sigmoid_0d", [](const auto& x) { return sigmoid(x[0]); }, [] { return V{leaf({}, 306, -2.0, 2.0)}; }},
      {"sigmoid_of_broadcast_product", [](const auto& x) { return sigmoid(mul(x[0], x[1])); },
       [] { return V{leaf({3, 1}, 307, -2.0, 2.0), leaf({4}, 308, -2.0, 2.0)}; }},
  };
  s.errors = {
      error_input<ValueError>("sigmoid_undefined", "`sigmoid`", "undefined a",
                  [] { return sigmoid(bad_inputs::undefined()); },
                  {"sigmoid", "'a'", "undefined"}),
  };
  s.pytorch = {
      {"sigmoid", unary([](const T& x) { return sigmoid(x); })},
  };
  return s;
}

TAPEGRAD_OP_SPEC(tanh) {
  OpSpec s("tanh", "activation");
  s.samples = {
      {"tanh", [](const auto& x) { return tanh(x[0]); }, [] { return V{leaf({5}, 309, -2.0, 2.0)}; }},
      OpCase("tanh_times_input", [](const auto& x) { return mul(tanh(x[0]), x[1]); },
       [] { return V{leaf({2, 3}, 310, -2.0, 2.0), leaf({2, 3}, 311)}; }).at_scale([] { return V{leaf({97, 677}, 904, -2.0, 2.0), leaf({97, 677}, 905)}; }),
  };
  s.errors = {
      error_input<ValueError>("tanh_undefined", "`tanh`", "undefined a",
                  [] { return tanh(bad_inputs::undefined()); },
                  {"tanh", "'a'", "undefined"}),
  };
  s.pytorch = {
      {"tanh", unary([](const T& x) { return tanh(x); })},
  };
  return s;
}

TAPEGRAD_OP_SPEC(gelu) {
  OpSpec s("gelu", "activation");
  s.samples = {
      OpCase("gelu", [](const auto& x) { return gelu(x[0]); }, [] { return V{leaf({2, 4}, 312, -3.0, 3.0)}; }).at_scale([] { return V{leaf({5, 97, 131}, 906, -3.0, 3.0)}; }),
      {"gelu_of_product", [](const auto& x) { return gelu(mul(x[0], x[1])); },
       [] { return V{leaf({3, 2}, 313, -2.0, 2.0), leaf({2}, 314, -2.0, 2.0)}; }},
      OpCase("gelu_tanh", [](const auto& x) { return gelu(x[0], GeluApproximation::Tanh); },
       [] { return V{leaf({2, 4}, 315, -3.0, 3.0)}; }).at_scale([] { return V{leaf({5, 97, 131}, 907, -3.0, 3.0)}; }),
      {"gelu_tanh_of_product", [](const auto& x) { return gelu(mul(x[0], x[1]), GeluApproximation::Tanh); },
       [] { return V{leaf({3, 2}, 316, -2.0, 2.0), leaf({3, 2}, 317, -2.0, 2.0)}; }},
  };
  s.errors = {
      error_input<ValueError>("gelu_undefined", "`gelu`", "undefined a",
                  [] { return gelu(bad_inputs::undefined(), GeluApproximation::Tanh); },
                  {"gelu", "'a'", "undefined"}),
  };
  s.pytorch = {
      {"nn.functional.gelu",
     [](Call& c) -> Outputs {
       const Value* approximate = c.kwarg("approximate");
       const std::string mode = approximate ? c.text(*approximate) : "none";
       if (mode != "none" && mode != "tanh") lacks("approximate='" + mode + "'");
       return {gelu(c.tensor(c.input()), mode == "tanh" ? GeluApproximation::Tanh : GeluApproximation::None)};
     }},
  };
  return s;
}

TAPEGRAD_OP_SPEC(softplus) {
  OpSpec s("softplus", "activation");
  s.samples = {
      // softplus: the soft region, the linear one (beta x > threshold) and a negative beta.
      OpCase("softplus", [](const auto& x) { return softplus(x[0]); }, [] { return V{leaf({3, 4}, 1101, -3.0, 3.0)}; })
          .at_scale([] { return V{leaf({5, 97, 131}, 1102, -3.0, 3.0)}; }),
      {"softplus_beta_threshold_both_regions", [](const auto& x) { return softplus(x[0], 2.0, 1.0); },
       [] { return V{leaf({2, 5}, 1103, -2.0, 2.0)}; }},
      {"softplus_negative_beta_of_product", [](const auto& x) { return softplus(mul(x[0], x[1]), -1.5); },
       [] { return V{leaf({3, 2}, 1104), leaf({2}, 1105)}; }},
  };
  s.errors = {
      error_input<ValueError>("softplus_zero_beta", "`softplus`", "beta 0 (PyTorch divides by it)",
                  [] { return softplus(bad_inputs::zeros({2}), 0.0); },
                  {"softplus", "beta = 0", "[2]"}),
      error_input<ValueError>("softplus_nan_threshold", "`softplus`", "threshold NaN",
                  [] { return softplus(bad_inputs::zeros({2}), 1.0, bad_inputs::nan); },
                  {"softplus", "threshold = nan", "[2]"}),
  };
  s.pytorch = {
      {"nn.functional.softplus",
     [](Call& c) -> Outputs {
       const Value* beta = c.kwarg("beta");
       const Value* threshold = c.kwarg("threshold");
       return {softplus(c.tensor(c.input()), beta ? c.number(*beta) : 1.0, threshold ? c.number(*threshold) : 20.0)};
     }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
