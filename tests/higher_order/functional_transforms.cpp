// The rules of the functional transforms (autograd/ops/functional.h) and nn::functional_call
// (nn/functional_call.h). Their values against PyTorch: functional_pytorch.cpp.
#include <gtest/gtest.h>
#include <xtensor/xio.hpp>

#include "autograd/ops/functional.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "nn/activation.h"
#include "nn/containers.h"
#include "nn/functional_call.h"
#include "nn/linear.h"
#include "tests/support/reference.h"

namespace tapegrad::testing {
namespace {

using Inputs = std::vector<Tensor<double>>;

Tensor<double> vec(std::initializer_list<double> values, bool requires_grad = false) {
  return Tensor<double>(xt::xarray<double>(values), requires_grad);
}

void expect_values(const Tensor<double>& t, const xt::xarray<double>& expected, const std::string& what) {
  EXPECT_TRUE(xt::allclose(t.value(), expected, 1e-13, 1e-13)) << what << ": " << t.value() << ", expected " << expected;
}

// ---- one tensor at two input positions is two variables ----------------------------------------

TEST(FunctionalAliasing, EachPositionOfATensorGivenTwiceIsItsOwnVariable) {
  // f(a, b) = a * b at a = b = x: d/da (v a b) = v b = v x, d/db = v a = v x, as in PyTorch and JAX
  // (the two positions taken as one variable would give 2 v x each).
  const Tensor<double> x = vec({1.0, 2.0}, true);
  const TensorFunction<double> product = [](const Inputs& p) { return p[0] * p[1]; };
  const auto [y, jt_v] = vjp(product, {x, x}, vec({1.0, 1.0}));
  expect_values(y, {1.0, 4.0}, "vjp value");
  expect_values(jt_v[0], {1.0, 2.0}, "vjp, position 0");
  expect_values(jt_v[1], {1.0, 2.0}, "vjp, position 1");

  const auto g = grad<double>([](const Inputs& p) { return sum(p[0] * p[1] * p[1]); }, {x, x});
  expect_values(g[0], {1.0, 4.0}, "grad of sum(a b^2), position 0: b^2");
  expect_values(g[1], {2.0, 8.0}, "grad of sum(a b^2), position 1: 2 a b");

  // J u = u_a * b + a * u_b.
  const auto [y2, j_u] = jvp(product, {x, x}, {vec({1.0, 0.0}), vec({0.0, 1.0})});
  expect_values(j_u[0], {1.0, 2.0}, "jvp");

  // f = sum(a^2 b): H = [[2b, 2a], [2a, 0]] per element, so H (v_a, v_b) = (2b v_a + 2a v_b, 2a v_a).
  const auto hv = hessian_vector_product<double>([](const Inputs& p) { return sum(p[0] * p[0] * p[1]); }, {x, x},
                                                 {vec({1.0, 1.0}), vec({0.0, 1.0})});
  expect_values(hv[0], {2.0, 8.0}, "hvp, position 0");
  expect_values(hv[1], {2.0, 4.0}, "hvp, position 1");
}

TEST(FunctionalAliasing, CreateGraphResultsDifferentiateWithRespectToTheCallersTensor) {
  // grad of sum(a^2 b) at (x, x) is (2 a b, a^2) = (2x^2, x^2); the outer tape differentiates
  // their sum 3 x^2 to 6 x, through both positions.
  const Tensor<double> x = vec({1.5, -2.0}, true);
  GradientTape outer;
  const auto g = grad<double>([](const Inputs& p) { return sum(p[0] * p[0] * p[1]); }, {x, x}, {.create_graph = true});
  expect_values(g[0], {4.5, 8.0}, "position 0");
  expect_values(g[1], {2.25, 4.0}, "position 1");
  ASSERT_TRUE(g[0].requires_grad());
  const auto second = outer.gradient(sum(g[0] + g[1]), {x});
  expect_values(second[0], {9.0, -12.0}, "d/dx of the sum of both positions' gradients");
}

TEST(FunctionalAliasing, WithoutCreateGraphTheValueAndDerivativesAreConstants) {
  const Tensor<double> x = vec({1.0, 2.0}, true);
  GradientTape outer;
  const auto [y, jt_v] = vjp<double>([](const Inputs& p) { return exp(p[0]); }, {x}, vec({1.0, 1.0}));
  EXPECT_FALSE(y.requires_grad());
  EXPECT_FALSE(jt_v[0].requires_grad());
  EXPECT_TRUE(x.requires_grad());  // the caller's tensor is untouched
  EXPECT_FALSE(x.has_grad());
}

// ---- inputs the result does not depend on -----------------------------------------------------

const TensorFunction<double> reads_only_first = [](const Inputs& p) { return sum(exp(p[0])); };

TEST(FunctionalUnusedInputs, AreRefusedNamingTheTransformAndThePosition) {
  const Tensor<double> a = vec({0.5, 1.0}, true), b = vec({2.0, 3.0}, true);
  const Tensor<double> v = vec({1.0, 1.0});
  EXPECT_TRUE(throws_with<ValueError>([&] { grad(reads_only_first, {a, b}); },
                                      {"grad: the function's result does not depend on input 1 [2]", "allow_unused"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { hessian_vector_product(reads_only_first, {a, b}, {v, v}); },
                                      {"hessian_vector_product: the function's result does not depend on input 1"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { vjp(reads_only_first, {a, b}, Tensor<double>::ones({})); },
                                      {"vjp: the function's result does not depend on input 1"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { jvp(reads_only_first, {a, b}, {v, v}); },
                                      {"jvp: the function's result does not depend on input 1"}));
  // A result that reads no input at all: every position is named.
  const TensorFunction<double> constant_result = [](const Inputs&) { return Tensor<double>::ones({}); };
  EXPECT_TRUE(throws_with<ValueError>([&] { grad(constant_result, {a, b}); }, {"input 0 [2], input 1 [2]"}));
}

TEST(FunctionalUnusedInputs, AllowUnusedGivesZeros) {
  const Tensor<double> a = vec({0.5, 1.0}, true), b = vec({2.0, 3.0}, true);
  const Tensor<double> v = vec({1.0, 1.0});
  const FunctionalOptions allow{.allow_unused = true};
  const auto g = grad(reads_only_first, {a, b}, allow);
  expect_values(g[0], xt::exp(a.value()), "grad, used input");
  expect_values(g[1], {0.0, 0.0}, "grad, unused input");
  const auto hv = hessian_vector_product(reads_only_first, {a, b}, {v, v}, allow);
  expect_values(hv[0], xt::exp(a.value()), "hvp, used input");
  expect_values(hv[1], {0.0, 0.0}, "hvp, unused input");
  const TensorFunction<double> constant_result = [](const Inputs&) { return Tensor<double>::ones({}); };
  expect_values(grad(constant_result, {a}, allow)[0], {0.0, 0.0}, "grad of a constant");
  expect_values(jvp(constant_result, {a}, {v}, allow).derivative[0], xt::xarray<double>(0.0), "jvp of a constant");
}

// ---- calls that cannot work, with messages that name the call ----------------------------------

TEST(FunctionalErrors, AnEmptyInputListIsRefused) {
  const TensorFunction<double> constant_result = [](const Inputs&) { return Tensor<double>::ones({}); };
  for (const char* op : {"grad", "vjp", "jvp", "hessian_vector_product"}) {
    const auto call = [&] {
      const std::string name = op;
      if (name == "grad") grad(constant_result, {});
      if (name == "vjp") vjp(constant_result, {}, Tensor<double>::ones({}));
      if (name == "jvp") jvp(constant_result, {}, {});
      if (name == "hessian_vector_product") hessian_vector_product(constant_result, {}, {});
    };
    EXPECT_TRUE(throws_with<ValueError>(call, {std::string(op) + ": no inputs"})) << op;
  }
}

// As torch.autograd.functional, which turns recording back on inside: the transform's own tape
// records under the guard, the paused tapes outside do not.
TEST(FunctionalUnderNoGradGuard, TransformsWorkAndRecordNothingOutside) {
  const Tensor<double> x = vec({1.0, 2.0}, true);
  GradientTape outer;
  const NoGradGuard paused;
  const auto square = [](const Inputs& p) { return sum(p[0] * p[0]); };
  expect_values(grad<double>(square, {x})[0], 2.0 * x.value(), "grad under NoGradGuard");
  const auto hv = hessian_vector_product<double>(square, {x}, {vec({1.0, -1.0}, false)}, {.create_graph = true});
  expect_values(hv[0], xt::xarray<double>({2.0, -2.0}), "hessian_vector_product under NoGradGuard");
  EXPECT_EQ(outer.size(), 0u);
}

TEST(FunctionalErrors, ResultOfManyElementsForGradIsNamed) {
  const Tensor<double> x = vec({1.0, 2.0}, true);
  EXPECT_TRUE(throws_with<ShapeError>([&] { grad<double>([](const Inputs& p) { return exp(p[0]); }, {x}); },
                                      {"grad: the function's result [2] has 2 elements"}));
}

// ---- intermediates of an outer computation ---------------------------------------------------

TEST(FunctionalOuterIntermediates, AreVariablesOfTheTransformWithoutCreateGraph) {
  // h = exp(w) recorded by an outer tape; d sum(h^2) / dh = 2h (PyTorch detaches it as well).
  const Tensor<double> w = vec({0.0, 1.0}, true);
  GradientTape outer;
  const Tensor<double> h = exp(w);
  const auto g = grad<double>([](const Inputs& p) { return sum(p[0] * p[0]); }, {h});
  expect_values(g[0], 2.0 * h.value(), "gradient with respect to the intermediate");
  // The outer tape is still usable: the transform walked its own tape only.
  expect_values(outer.gradient(sum(h), {w})[0], h.value(), "the outer tape afterwards");
}

TEST(FunctionalOuterIntermediates, WithCreateGraphTheyAreRefusedSayingWhatToDo) {
  const Tensor<double> w = vec({0.0, 1.0}, true);
  GradientTape outer;
  const Tensor<double> h = exp(w);
  EXPECT_TRUE(throws_with<TapeError>(
      [&] { grad<double>([](const Inputs& p) { return sum(p[0] * p[0]); }, {h}, {.create_graph = true}); },
      {"grad: input 0", "is an intermediate", "create_graph", "detach()"}));
  // With a leaf made from it, create_graph works: the results depend on that leaf.
  const Tensor<double> leaf = h.detach().set_requires_grad(true);
  const auto g = grad<double>([](const Inputs& p) { return sum(p[0] * p[0] * p[0]); }, {leaf}, {.create_graph = true});
  expect_values(outer.gradient(sum(g[0]), {leaf})[0], 6.0 * h.value(), "second derivative");
}

// ---- a module's parameters through nn::functional_call -----------------------------------------

struct Mlp {
  Generator gen{20261128};
  std::shared_ptr<nn::Sequential<double>> model = std::make_shared<nn::Sequential<double>>(
      std::vector<std::shared_ptr<nn::UnaryModule<double>>>{std::make_shared<nn::Linear<double>>(3, 4, gen),
                                                              std::make_shared<nn::GELU<double>>(),
                                                              std::make_shared<nn::Linear<double>>(4, 2, gen)});
  Tensor<double> x = random_tensor({5, 3}, 31, false);
  Tensor<double> y = random_tensor({5, 2}, 32, false);
  std::vector<std::string> names;
  Inputs params;
  Mlp() {
    for (const auto& [name, p] : model->named_parameters()) {
      names.push_back(name);
      params.push_back(p);
    }
  }
  TensorFunction<double> loss_of_parameters() {
    return [this](const Inputs& p) { return mse_loss(nn::functional_call(*model, names, p, x), y); };
  }
  // The loss's gradient with respect to the module's own parameters, by backward.
  Inputs gradient_at_own_parameters() {
    for (auto& p : params) p.zero_grad();
    GradientTape tape;
    tape.backward(mse_loss((*model)(x), y));
    Inputs g;
    for (auto& p : params) g.push_back(Tensor<double>(p.grad()));
    for (auto& p : params) p.zero_grad();
    return g;
  }
};

TEST(FunctionalCall, HessianVectorProductOfAnMlpMatchesDifferencesOfItsGradient) {
  Mlp m;
  Inputs v;
  for (std::size_t i = 0; i < m.params.size(); ++i) v.push_back(random_tensor(m.params[i].shape(), 40 + i, false));
  const auto hv = hessian_vector_product(m.loss_of_parameters(), m.params, v);
  // Oracle: (g(p + h v) - g(p - h v)) / 2h, g by backward through the module's own parameters,
  // moved in place (no functional_call, no transform).
  const double h = 1e-5;
  const auto shifted_gradient = [&](double step) {
    std::vector<xt::xarray<double>> saved;
    for (std::size_t i = 0; i < m.params.size(); ++i) {
      saved.push_back(m.params[i].value());
      m.params[i].mutable_value() += step * v[i].value();
    }
    Inputs g = m.gradient_at_own_parameters();
    for (std::size_t i = 0; i < m.params.size(); ++i) m.params[i].mutable_value() = saved[i];
    return g;
  };
  const Inputs plus = shifted_gradient(h), minus = shifted_gradient(-h);
  for (std::size_t i = 0; i < m.params.size(); ++i) {
    const xt::xarray<double> numeric = (plus[i].value() - minus[i].value()) / (2.0 * h);
    EXPECT_TRUE(xt::allclose(hv[i].value(), numeric, 1e-5, 1e-8)) << m.names[i] << ": " << hv[i].value() << " vs " << numeric;
    EXPECT_GT(xt::amax(xt::abs(numeric))(), 1e-3) << m.names[i] << ": the oracle must not be zero";
  }
}

TEST(FunctionalCall, AFunctionThatIgnoresItsParameterInputsIsRefusedNotAZeroHvp) {
  // The module's own parameters are not the transform's variables: the HVP used to be zeros.
  Mlp m;
  const TensorFunction<double> own_parameters = [&m](const Inputs&) { return mse_loss((*m.model)(m.x), m.y); };
  EXPECT_TRUE(throws_with<ValueError>([&] { hessian_vector_product(own_parameters, m.params, m.params); },
                                      {"hessian_vector_product: the function's result does not depend on input 0",
                                       "functional_call"}));
}

TEST(FunctionalCall, PutsTheModulesOwnParametersBackAlsoWhenTheCallThrows) {
  Mlp m;
  const Inputs doubled{Tensor<double>(xt::xarray<double>(2.0 * m.params[0].value()))};
  const Tensor<double> out = nn::functional_call(*m.model, {"0.weight"}, doubled, m.x);
  const Tensor<double> own = (*m.model)(m.x);
  EXPECT_FALSE(xt::allclose(out.value(), own.value()));
  EXPECT_TRUE(m.model->named_parameters()[0].second.same_node(m.params[0]));
  // A call that throws inside forward (x of the wrong width) restores them too.
  EXPECT_THROW(nn::functional_call(*m.model, {"0.weight"}, doubled, random_tensor({5, 7}, 33, false)), ShapeError);
  EXPECT_TRUE(m.model->named_parameters()[0].second.same_node(m.params[0]));
  EXPECT_EQ((*m.model)(m.x).value(), own.value());
}

TEST(FunctionalCall, RefusesUnknownNamesAndWrongShapesChangingNothing) {
  Mlp m;
  const Inputs one{random_tensor({4, 3}, 34)};
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::functional_call(*m.model, {"0.wieght"}, one, m.x); },
                                      {"functional_call: Sequential has no parameter '0.wieght'", "'0.weight'"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { nn::functional_call(*m.model, {"2.weight"}, one, m.x); },
                                      {"functional_call: the tensor for parameter '2.weight' has shape [4,3] but the "
                                       "parameter is [2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::functional_call(*m.model, {"0.weight", "0.bias"}, one, m.x); },
                                      {"functional_call: 2 names for 1 tensors"}));
  for (std::size_t i = 0; i < m.params.size(); ++i) EXPECT_TRUE(m.model->parameters()[i].same_node(m.params[i]));
}

}  // namespace
}  // namespace tapegrad::testing
