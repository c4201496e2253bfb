// The README's code snippets, compiled and run, so the README stays true.
#include <algorithm>
#include <array>
#include <cmath>

#include "autograd/core/custom_op.h"
#include "autograd/ops/functional.h"
#include "autograd/testing/gradcheck.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "autograd/testing/gradcheck_gtest.h"
#include "study/attribution.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

TEST(Readme, UsingItSnippet) {
  Generator gen(0);
  auto w = Tensor<float>::randn({3, 4}, gen).set_requires_grad(true);
  auto x = Tensor<float>::randn({2, 3}, gen);
  GradientTape tape;
  auto loss = mean(tanh(matmul(x, w)));
  tape.backward(loss);
  // The comment's formula, by loops: dL/dw[k][j] = sum_i x[i][k] (1 - tanh^2((x w)[i][j])) / 8.
  for (std::size_t k = 0; k < 3; ++k) {
    for (std::size_t j = 0; j < 4; ++j) {
      double expected = 0.0;
      for (std::size_t i = 0; i < 2; ++i) {
        double z = 0.0;
        for (std::size_t m = 0; m < 3; ++m) z += double(x.value()(i, m)) * double(w.value()(m, j));
        expected += double(x.value()(i, k)) * (1.0 - std::tanh(z) * std::tanh(z)) / 8.0;
      }
      EXPECT_NEAR(w.grad()(k, j), expected, 1e-6) << k << ", " << j;
    }
  }
}

template <class T>  // float64 for gradcheck's defaults, float32 for its float32 mode
Tensor<T> cube(const Tensor<T>& x) {
  return custom_op("cube", xt::xarray<T>(x.value() * x.value() * x.value()),
                   [x](const Tensor<T>& grad, const Tensor<T>& /*result*/) {
                     add_gradient(x, mul(mul(grad, mul(x, x)), T(3)));   // a formula over ops
                   }, x);
}

// The op with a wrong first derivative (3x instead of 3x^2), with one that forgot the factor 3
// (the README's sample report), and with a right first derivative whose formula hides one x from
// the second (detach): each check must catch its own.
Tensor<double> wrong_first(const Tensor<double>& x) {
  return custom_op("wrong_first", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x](const Tensor<double>& grad, const Tensor<double>&) { add_gradient(x, mul(mul(grad, x), 3.0)); }, x);
}
Tensor<double> wrong_factor(const Tensor<double>& x) {
  return custom_op("wrong_factor", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x](const Tensor<double>& grad, const Tensor<double>&) { add_gradient(x, mul(grad, mul(x, x))); }, x);
}
Tensor<double> wrong_second(const Tensor<double>& x) {
  return custom_op("wrong_second", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x](const Tensor<double>& grad, const Tensor<double>&) {
                     add_gradient(x, mul(mul(grad, mul(x, x.detach())), 3.0));
                   }, x);
}

TEST(Readme, GradcheckYourOwnOpSnippet) {
  Generator gen(0);
  std::vector<Tensor<double>> in{Tensor<double>::randn({2, 3}, gen).set_requires_grad(true)};
  auto f = [](const std::vector<Tensor<double>>& x) { return cube(x[0]); };
  const auto first = gradcheck(f, in);
  EXPECT_TRUE(first.ok) << first.message;
  const auto second = gradgradcheck(f, in);
  EXPECT_TRUE(second.ok) << second.message;
  const auto fast = gradcheck(f, in, {.fast_mode = true});
  EXPECT_TRUE(fast.ok) << fast.message;
  EXPECT_FALSE(gradcheck([](const std::vector<Tensor<double>>& x) { return wrong_first(x[0]); }, in).ok);
  auto bad_second = [](const std::vector<Tensor<double>>& x) { return wrong_second(x[0]); };
  EXPECT_TRUE(gradcheck(bad_second, in).ok);
  EXPECT_FALSE(gradgradcheck(bad_second, in).ok);
}

// The README's sample report: a backward that forgot the factor 3.
TEST(Readme, GradcheckReportSample) {
  Generator gen(0);
  std::vector<Tensor<double>> in{Tensor<double>::randn({2, 3}, gen).set_requires_grad(true)};
  const auto r = gradcheck([](const std::vector<Tensor<double>>& x) { return wrong_factor(x[0]); }, in);
  ASSERT_TRUE(r.worst);
  for (const char* fragment : {"gradcheck: Jacobian mismatch for input 0 of shape [2,3], element [", "output element [",
                               "estimated numeric error", "The worst of 6 mismatched elements",
                               "Ops that read this input directly: wrong_factor (called at"}) {
    EXPECT_NE(r.message.find(fragment), std::string::npos) << r.message << " lacks " << fragment;
  }
  EXPECT_NEAR(r.worst->numeric, 3.0 * r.worst->analytic, 1e-6 * std::abs(r.worst->numeric));
}

TEST(Readme, GradcheckMacroSnippet) {
  Generator gen(0);
  std::vector<Tensor<double>> in{Tensor<double>::randn({2, 3}, gen).set_requires_grad(true)};
  auto f = [](const std::vector<Tensor<double>>& x) { return cube(x[0]); };
  const Tensor<float> x32 = Tensor<float>::randn({2, 3}, gen).set_requires_grad(true);
  EXPECT_GRADCHECK(f, in);
  ASSERT_GRADCHECK(f, in, {.fast_mode = true});
  EXPECT_GRADGRADCHECK(f, in);
  EXPECT_GRADCHECK([](const std::vector<Tensor<float>>& x) { return cube(x[0]); }, {x32});  // float32
}

TEST(Readme, HigherOrderSnippet) {
  // loss = sum(x^3): g = 3x^2, and the gradient of sum(g * g) = 9 sum(x^4) is 36 x^3.
  Tensor<double> x(xt::xarray<double>{0.5, -2.0}, true);
  GradientTape tape;
  auto loss = sum(cube(x));
  auto g = tape.gradient(loss, {x}, {.create_graph = true})[0];
  auto gg = tape.gradient(sum(mul(g, g)), {x})[0];
  EXPECT_EQ(gg.value(), (xt::xarray<double>{4.5, -288.0}));

  const TensorFunction<double> f = [](const std::vector<Tensor<double>>& p) { return sum(cube(p[0])); };
  EXPECT_EQ(grad(f, {x})[0].value(), (xt::xarray<double>{0.75, 12.0}));
  const Tensor<double> v(xt::xarray<double>{1.0, 2.0});
  EXPECT_EQ(hessian_vector_product(f, {x}, {v})[0].value(), (xt::xarray<double>{3.0, -24.0}));  // 6 x v
  const auto [y, j_u] = jvp<double>([](const std::vector<Tensor<double>>& p) { return cube(p[0]); }, {x}, {v});
  EXPECT_EQ(j_u[0].value(), (xt::xarray<double>{0.75, 24.0}));  // 3 x^2 u
}

// The README's attribution snippet (tests/CMakeLists.txt copies it out of the README) with its
// inputs: two layers of 2 heads over 3 tokens, and grad_at for F(A) = sum(A²) over layer 0.
TEST(Readme, AttributionSnippet) {
  std::vector<xt::xarray<double>> attention, gradients;
  for (std::uint64_t seed : {1, 2}) {
    xt::xarray<double> a = xt::abs(random_tensor({1, 2, 3, 3}, seed, false).value());
    attention.push_back(xt::xarray<double>(a / xt::eval(xt::sum(a, {3}, xt::keep_dims))));
    gradients.push_back(random_tensor({1, 2, 3, 3}, seed + 10, false).value());
  }
  const nn::AttentionGradientAt<double> grad_at = [&](double alpha) {
    return xt::xarray<double>(2.0 * alpha * attention[0]);
  };
#include "attribution_snippet.inc"
  EXPECT_LT(max_abs_diff(xt::xarray<double>(xt::sum(rollout, {2})), xt::ones<double>({1, 3})), 1e-12);
  EXPECT_EQ(flow.shape(), rollout.shape());  // its values: tests/test_attribution.cpp's hand-solved flows
  // The README table's formulas by loops. Per layer: S_h = sum of A ⊙ dL/dA over the map, and
  // I + Ā with Ā = mean_heads(max(A ⊙ dL/dA, 0)).
  using Matrix = std::array<std::array<double, 3>, 3>;
  std::array<Matrix, 2> residual{};
  double head_sum[2][2] = {};
  for (std::size_t l = 0; l < 2; ++l) {
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        residual[l][i][j] = i == j ? 1.0 : 0.0;
        for (std::size_t h = 0; h < 2; ++h) {
          const double product = attention[l](0, h, i, j) * gradients[l](0, h, i, j);
          head_sum[l][h] += product;
          residual[l][i][j] += std::max(product, 0.0) / 2.0;
        }
      }
    }
  }
  // Later layers on the left: M_1 · M_0, with or without each row divided by its sum.
  const auto product = [&](bool normalize_rows) {
    std::array<Matrix, 2> m = residual;
    for (Matrix& layer : m) {
      for (auto& row : layer) {
        const double total = normalize_rows ? row[0] + row[1] + row[2] : 1.0;
        for (double& v : row) v /= total;
      }
    }
    xt::xarray<double> r = xt::zeros<double>({1, 3, 3});
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t k = 0; k < 3; ++k) r(0, i, j) += m[1][i][k] * m[0][k][j];
    return r;
  };
  EXPECT_LT(max_abs_diff(weighted, product(true)), 1e-12);
  EXPECT_LT(max_abs_diff(relevance, product(false)), 1e-12);
  // |S_h| per head, each layer divided by its L2 norm over the heads.
  xt::xarray<double> expected_importance = xt::zeros<double>({2, 2});
  for (std::size_t l = 0; l < 2; ++l) {
    const double norm = std::hypot(head_sum[l][0], head_sum[l][1]);
    for (std::size_t h = 0; h < 2; ++h) expected_importance(l, h) = std::abs(head_sum[l][h]) / norm;
  }
  EXPECT_LT(max_abs_diff(importance, expected_importance), 1e-12);
  // F = sum(A²): 20 right-Riemann steps give A² · 21/20.
  EXPECT_LT(max_abs_diff(attribution, attention[0] * attention[0] * 1.05), 1e-12);
}

}  // namespace
}  // namespace tapegrad
