#include <cmath>
#include <limits>

#include "autograd/kernels/parallel.h"
#include "autograd/ops/normalization.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

namespace tapegrad {
namespace {

struct NormCase {
  Shape x, normalized;
};

// k = 1 and 2 trailing axes, size-1 axes, a row count spanning several gradient chunks (32 rows
// each) and one large enough to run in parallel.
const std::vector<NormCase> kNormCases = {{{2, 3, 4}, {4}},    {{2, 3, 4}, {3, 4}}, {{5}, {5}},        {{3, 1}, {1}},
                                  {{2, 1, 3}, {1, 3}}, {{70, 3}, {3}},      {{64, 130}, {130}}};
const std::vector<NormCase> kNormGradcheckCases = {{{3, 4}, {4}}, {{2, 3, 4}, {3, 4}}, {{2, 2, 3}, {3}}, {{4}, {4}},
                                           {{1, 3}, {3}}, {{2, 1, 3}, {1, 3}}, {{70, 3}, {3}}};

// Which of weight and bias a case passes.
struct Affine {
  bool weight, bias;
};
const std::vector<Affine> kAffine = {{false, false}, {true, false}, {false, true}, {true, true}};

std::size_t numel(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) n *= s;
  return n;
}

// The reference: per row of n elements, (x - mean) / sqrt(var + eps) * w + b, biased variance.
xt::xarray<double> naive_layer_norm(const xt::xarray<double>& x, std::size_t n, const xt::xarray<double>* w,
                                    const xt::xarray<double>* b, double eps) {
  xt::xarray<double> y = x;
  for (std::size_t r = 0; r < x.size() / n; ++r) {
    const double* row = x.data() + r * n;
    double mean = 0.0, var = 0.0;
    for (std::size_t c = 0; c < n; ++c) mean += row[c] / double(n);
    for (std::size_t c = 0; c < n; ++c) var += (row[c] - mean) * (row[c] - mean) / double(n);
    for (std::size_t c = 0; c < n; ++c) {
      y.data()[r * n + c] =
          (row[c] - mean) / std::sqrt(var + eps) * (w ? w->data()[c] : 1.0) + (b ? b->data()[c] : 0.0);
    }
  }
  return y;
}

std::string describe(const NormCase& c, const Affine& a) {
  return "x " + format_shape(c.x) + " normalized " + format_shape(c.normalized) + (a.weight ? " +weight" : "") +
         (a.bias ? " +bias" : "");
}

TEST(LayerNorm, ForwardMatchesHandComputed) {
  const Tensor<double> x(xt::xarray<double>{{1.0, 2.0, 3.0, 4.0}, {2.0, 2.0, 2.0, 2.0}});
  const double s = std::sqrt(1.25 + 1e-5);  // row 0: mean 2.5, biased variance 1.25
  EXPECT_LT(max_abs_diff(layer_norm(x, {4}).value(),
                         xt::xarray<double>{{-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s}, {0.0, 0.0, 0.0, 0.0}}),
            1e-15);
  const Tensor<double> w(xt::xarray<double>{1.0, 2.0, 3.0, 4.0}), b(xt::xarray<double>{0.5, 0.5, 0.5, -1.0});
  EXPECT_LT(max_abs_diff(layer_norm(x, {4}, w, b, 0.75).value(),
                         xt::xarray<double>{{-1.5 / std::sqrt(2.0) + 0.5, -1.0 / std::sqrt(2.0) + 0.5,
                                             1.5 / std::sqrt(2.0) + 0.5, 6.0 / std::sqrt(2.0) - 1.0},
                                            {0.5, 0.5, 0.5, -1.0}}),
            1e-15);
}

TEST(LayerNorm, ForwardMatchesNaiveLoops) {
  for (const NormCase& c : kNormCases) {
    for (const Affine& a : kAffine) {
      SCOPED_TRACE(describe(c, a));
      const auto x = random_tensor(c.x, 1, false, -3.0, 3.0);
      const auto w = random_tensor(c.normalized, 2, false, 0.5, 1.5);
      const auto b = random_tensor(c.normalized, 3, false);
      const auto y = layer_norm(x, c.normalized, a.weight ? w : Tensor<double>(), a.bias ? b : Tensor<double>(), 1e-3);
      const xt::xarray<double> expected = naive_layer_norm(
          x.value(), numel(c.normalized), a.weight ? &w.value() : nullptr, a.bias ? &b.value() : nullptr, 1e-3);
      EXPECT_LT(max_abs_diff(y.value(), expected), 1e-12);
    }
  }
}

TEST(LayerNorm, FloatForwardMatchesDoubleReference) {
  const auto x = random_tensor({64, 130}, 4, false, -3.0, 3.0);
  const auto y = layer_norm(x.to<float>(), {130});
  EXPECT_LT(max_abs_diff(xt::xarray<double>(xt::cast<double>(y.value())),
                         naive_layer_norm(x.value(), 130, nullptr, nullptr, 1e-5)),
            1e-5);
}

TEST(LayerNorm, GradcheckWithAndWithoutWeightAndBias) {
  for (const NormCase& c : kNormGradcheckCases) {
    for (const Affine& a : kAffine) {
      SCOPED_TRACE(describe(c, a));
      Inputs inputs{random_tensor(c.x, 5, true, -2.0, 2.0)};
      if (a.weight) inputs.push_back(random_tensor(c.normalized, 6, true, 0.5, 1.5));
      if (a.bias) inputs.push_back(random_tensor(c.normalized, 7));
      const Shape normalized = c.normalized;
      EXPECT_TRUE(passes_gradcheck(
          [a, normalized](const Inputs& x) {
            return layer_norm(x[0], normalized, a.weight ? x[1] : Tensor<double>(),
                              a.bias ? x.back() : Tensor<double>());
          },
          inputs));
    }
  }
}

TEST(LayerNorm, GradcheckParametersOfAConstantInput) {
  const Shape normalized{3, 2};
  EXPECT_TRUE(passes_gradcheck(
      [normalized](const Inputs& x) { return layer_norm(x[0], normalized, x[1], x[2], 1e-2); },
      {random_tensor({4, 3, 2}, 8, false), random_tensor(normalized, 9), random_tensor(normalized, 10)}));
}

TEST(LayerNorm, ParameterGradientsMatchNaiveRowSums) {
  // dweight = sum over rows of g * xhat and dbias = sum of g, over 100 rows (four chunks).
  const std::size_t rows = 100, n = 5;
  const auto x = random_tensor({rows, n}, 11, false, -2.0, 2.0);
  const auto w = random_tensor({n}, 12), b = random_tensor({n}, 13);
  const xt::xarray<double> g = random_tensor({rows, n}, 14, false).value();
  GradientTape tape;
  tape.backward(layer_norm(x, {n}, w, b), g);
  const xt::xarray<double> xhat = naive_layer_norm(x.value(), n, nullptr, nullptr, 1e-5);
  xt::xarray<double> dw = xt::zeros<double>({n}), db = xt::zeros<double>({n});
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < n; ++c) {
      dw(c) += g(r, c) * xhat(r, c);
      db(c) += g(r, c);
    }
  }
  EXPECT_LT(max_abs_diff(w.grad(), dw), 1e-12);
  EXPECT_LT(max_abs_diff(b.grad(), db), 1e-12);
}

TEST(LayerNorm, BitIdenticalAtAnyThreadCount) {
  const testing_support::ThreadCountTest thread_count_test;
  Generator gen(15);
  const auto x = Tensor<float>::randn({1000, 64}, gen, 0.0f, 2.0f, true);
  const auto w = Tensor<float>::randn({64}, gen, 1.0f, 0.1f, true);
  const auto b = Tensor<float>::randn({64}, gen, 0.0f, 0.1f, true);
  const auto g = Tensor<float>::randn({1000, 64}, gen).value();
  const auto run = [&](std::size_t threads) {
    set_num_threads(threads);
    for (const auto* t : {&x, &w, &b}) t->node()->clear_grad();
    GradientTape tape;
    const auto y = layer_norm(x, {64}, w, b);
    tape.backward(y, g);
    return std::vector<xt::xarray<float>>{y.value(), x.grad(), w.grad(), b.grad()};
  };
  const auto one = run(1);
  const auto two = run(2);
  for (std::size_t i = 0; i < one.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(one[i] == two[i]);
  }
}

TEST(LayerNorm, NormalizedShapeNotTrailingDimsThrows) {
  const auto x = random_tensor({2, 4}, 16);
  EXPECT_TRUE(throws_with<ShapeError>([&] { layer_norm(x, {3}); }, {"layer_norm", "normalized_shape [3]", "[2,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { layer_norm(x, {4, 2}); }, {"layer_norm", "[4,2]", "[2,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { layer_norm(x, {3, 2, 4}); }, {"layer_norm", "[3,2,4]", "[2,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { layer_norm(x, {}); }, {"layer_norm", "normalized_shape []", "[2,4]"}));
}

TEST(LayerNorm, WeightOrBiasShapeMismatchThrows) {
  const auto x = random_tensor({2, 4}, 17);
  EXPECT_TRUE(throws_with<ShapeError>([&] { layer_norm(x, {4}, random_tensor({3}, 18)); },
                                      {"layer_norm", "weight", "[3]", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        layer_norm(x, {4}, {}, random_tensor({4, 1}, 19));
      },
      {"layer_norm", "bias", "[4,1]", "[4]"}));
}

TEST(LayerNorm, BadEpsOrUndefinedInputThrows) {
  const auto x = random_tensor({2, 4}, 20);
  for (const double eps : {0.0, -1e-5, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_TRUE(throws_with<ValueError>([&] { layer_norm(x, {4}, {}, {}, eps); }, {"layer_norm", "eps"}));
  }
  EXPECT_TRUE(throws_with<ValueError>([] { layer_norm(Tensor<double>(), {4}); }, {"layer_norm", "'x'", "undefined"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

TAPEGRAD_OP_SPEC(layer_norm) {
  OpSpec s("layer_norm", "normalization");
  s.samples = {
      // layer_norm: with and without weight and bias, one and two normalized axes.
      OpCase("layer_norm_x_only", [](const auto& x) { return layer_norm(x[0], {4}); }, [] { return V{leaf({3, 4}, 301)}; }).at_scale([] { return V{leaf({4001, 4}, 918)}; }),
      {"layer_norm_vector", [](const auto& x) { return layer_norm(x[0], {6}); }, [] { return V{leaf({6}, 302)}; }},
      OpCase("layer_norm_weight_bias", [](const auto& x) { return layer_norm(x[0], {4}, x[1], x[2]); },
       [] { return V{leaf({2, 3, 4}, 303), leaf({4}, 304), leaf({4}, 305)}; }).at_scale([] { return V{leaf({61, 97, 4}, 915), leaf({4}, 916), leaf({4}, 917)}; }),
      {"layer_norm_weight_only", [](const auto& x) { return layer_norm(x[0], {5}, x[1]); },
       [] { return V{leaf({3, 5}, 306), leaf({5}, 307)}; }},
      {"layer_norm_bias_only", [](const auto& x) { return mul(layer_norm(x[0], {5}, {}, x[1]), x[0]); },
       [] { return V{leaf({3, 5}, 308), leaf({5}, 309)}; }},
      {"layer_norm_two_axes", [](const auto& x) { return layer_norm(x[0], {3, 2}, x[1], x[2]); },
       [] { return V{leaf({2, 3, 2}, 310), leaf({3, 2}, 311), leaf({3, 2}, 312)}; }},
      {"layer_norm_squared",
       [](const auto& x) {
         const auto y = layer_norm(x[0], {4}, x[1], x[2]);
         return mul(y, y);
       },
       [] { return V{leaf({3, 4}, 313), leaf({4}, 314), leaf({4}, 315)}; }},
      {"layer_norm_constant_x",
       [](const auto& x) {
         const auto y = layer_norm(x[0], {4}, x[1], x[2]);
         return mul(y, y);
       },
       [] { return V{constant({3, 4}, 316), leaf({4}, 317), leaf({4}, 318)}; }},
  };
  s.errors = {
      error_input<ShapeError>("layer_norm_empty_normalized_shape", "`layer_norm`", "normalized_shape []",
                  [] { return layer_norm(bad_inputs::zeros({2, 3}), {}); },
                  {"layer_norm", "normalized_shape []", "[2,3]"}),
      error_input<ShapeError>("layer_norm_not_trailing_dims", "`layer_norm`", "normalized_shape [2] for [2,3]",
                  [] { return layer_norm(bad_inputs::zeros({2, 3}), {2}); },
                  {"layer_norm", "normalized_shape [2]", "[2,3]"}),
      error_input<ShapeError>("layer_norm_longer_than_input", "`layer_norm`", "normalized_shape [2,3] for [3]",
                  [] { return layer_norm(bad_inputs::zeros({3}), {2, 3}); },
                  {"layer_norm", "normalized_shape [2,3]", "[3]"}),
      error_input<ShapeError>("layer_norm_weight_shape", "`layer_norm`", "weight [2] for normalized_shape [3]",
                  [] { return layer_norm(bad_inputs::zeros({2, 3}), {3}, bad_inputs::zeros({2})); },
                  {"layer_norm", "weight", "[2]", "[3]"}),
      error_input<ShapeError>("layer_norm_bias_shape", "`layer_norm`", "bias [3,1]",
                  [] { return layer_norm(bad_inputs::zeros({2, 3}), {3}, bad_inputs::zeros({3}), bad_inputs::zeros({3, 1})); },
                  {"layer_norm", "bias", "[3,1]", "[3]"}),
      error_input<ValueError>("layer_norm_zero_eps", "`layer_norm`", "eps 0",
                  [] { return layer_norm(bad_inputs::zeros({2, 3}), {3}, {}, {}, 0.0); },
                  {"layer_norm", "eps", "0"}),
      error_input<ValueError>("layer_norm_nan_eps", "`layer_norm`", "eps NaN",
                  [] { return layer_norm(bad_inputs::zeros({2, 3}), {3}, {}, {}, bad_inputs::nan); },
                  {"layer_norm", "eps", "nan"}),
      error_input<ValueError>("layer_norm_infinite_eps", "`layer_norm`", "eps inf (the module's rule too: check_layer_norm_eps)",
                  [] { return layer_norm(bad_inputs::zeros({2, 3}), {3}, {}, {}, bad_inputs::inf); },
                  {"layer_norm", "eps", "inf"}),
      error_input<ValueError>("layer_norm_undefined_x", "`layer_norm`", "undefined x",
                  [] { return layer_norm(bad_inputs::undefined(), {3}); },
                  {"layer_norm", "'x'", "undefined"}),
  };
  s.pytorch = {
      {"nn.functional.layer_norm",
       [](Call& c) -> Outputs {
         const T x = c.tensor(c.input());
         Shape normalized;
         for (Index s : c.integers(c.arg(0))) normalized.push_back(std::size_t(s));
         const T weight = c.has_arg(1) ? c.tensor(c.arg(1)) : T();
         const T bias = c.has_arg(2) ? c.tensor(c.arg(2)) : T();
         const Value* eps = c.kwarg("eps");
         return {layer_norm(x, normalized, weight, bias, eps ? c.number(*eps) : 1e-5)};
       }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
