// tapegrad's functional transforms against PyTorch's torch.autograd.functional on generated cases
// (functional_pytorch.py says which): grad, vjp, jvp and hessian_vector_product, with one tensor
// given for both input positions, with an input the function never reads (refused without
// allow_unused where PyTorch's strict mode refuses it, zeros with it as PyTorch's default gives),
// and under create_graph, the derivative of the results with respect to the caller's tensors.
#include <cstdio>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "autograd/ops/functional.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"

namespace tapegrad::testing {
namespace {

using Inputs = std::vector<Tensor<double>>;

// The functions of functional_pytorch.py, in tapegrad.
const std::map<std::string, TensorFunction<double>>& functions() {
  static const std::map<std::string, TensorFunction<double>> table{
      {"sin_mul", [](const Inputs& x) { return sin(x[0]) * x[1] * x[1]; }},
      {"tanh_exp", [](const Inputs& x) { return tanh(x[0] * x[1]) + exp(x[0]) * 0.5; }},
      {"scaled_by_sum", [](const Inputs& x) { return x[0] * sum(x[1] * x[1]); }},
      {"ignores_b", [](const Inputs& x) { return exp(x[0]) * x[0]; }},
  };
  return table;
}

TensorFunction<double> scalar(const TensorFunction<double>& f) {
  return [f](const Inputs& x) { return sum(f(x)); };
}

nlohmann::json pytorch_cases() {
  const std::string command = "/usr/bin/python3 " FUNCTIONAL_PYTORCH_PY " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  if (::pclose(pipe) != 0) throw std::runtime_error(command + " failed (is python3-torch installed?):\n" + out);
  return nlohmann::json::parse(out);
}

Tensor<double> tensor_of(const nlohmann::json& shape, const nlohmann::json& values, bool requires_grad = false) {
  const auto s = shape.get<std::vector<std::size_t>>();
  xt::xarray<double> a = xt::xarray<double>::from_shape(s);
  const auto v = values.get<std::vector<double>>();
  if (v.size() != a.size()) throw std::runtime_error("a case's values do not fill its shape");
  std::copy(v.begin(), v.end(), a.begin());
  return Tensor<double>(std::move(a), requires_grad);
}

::testing::AssertionResult close(const Tensor<double>& actual, const nlohmann::json& expected_values,
                                 const std::string& what) {
  const auto expected = expected_values.get<std::vector<double>>();
  if (actual.numel() != expected.size()) {
    return ::testing::AssertionFailure() << what << ": " << actual.numel() << " elements, PyTorch has " << expected.size();
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double a = actual.value().data()[i], e = expected[i];
    if (!(std::abs(a - e) <= 1e-12 * (1.0 + std::abs(e)))) {
      return ::testing::AssertionFailure() << what << " element " << i << ": tapegrad " << a << ", PyTorch " << e;
    }
  }
  return ::testing::AssertionSuccess();
}

struct Answer {
  Tensor<double> value;  // vjp and jvp only
  std::vector<Tensor<double>> results;
};

Answer apply(const std::string& transform, const TensorFunction<double>& f, const Inputs& inputs, const Inputs& vectors,
             const FunctionalOptions& options) {
  if (transform == "grad") return {{}, grad(scalar(f), inputs, options)};
  if (transform == "vjp") {
    auto [value, results] = vjp(f, inputs, vectors.at(0), options);
    return {value, results};
  }
  if (transform == "jvp") {
    auto [value, results] = jvp(f, inputs, vectors, options);
    return {value, results};
  }
  return {{}, hessian_vector_product(scalar(f), inputs, vectors, options)};
}

void check_case(const nlohmann::json& c) {
  const std::string transform = c["transform"];
  const TensorFunction<double>& f = functions().at(c["function"]);
  const bool create_graph = c["create_graph"];
  Inputs leaves;
  for (const auto& values : c["leaves"]) leaves.push_back(tensor_of(c["shape"], values, true));
  Inputs inputs;
  for (std::size_t k : c["alias"].get<std::vector<std::size_t>>()) inputs.push_back(leaves[k]);
  Inputs vectors;
  for (const auto& v : c["vectors"]) vectors.push_back(tensor_of(v["shape"], v["values"]));

  bool refused = false;
  try {
    apply(transform, f, inputs, vectors, {.create_graph = create_graph});
  } catch (const ValueError& e) {
    refused = true;
    EXPECT_NE(std::string(e.what()).find("does not depend on input 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(refused, c["strict_raises"].get<bool>()) << "refused without allow_unused, as PyTorch's strict mode";

  GradientTape outer;
  const Answer answer = apply(transform, f, inputs, vectors, {.create_graph = create_graph, .allow_unused = true});
  if (!c["value"].is_null()) {
    EXPECT_TRUE(close(answer.value, c["value"], "value"));
  }
  ASSERT_EQ(answer.results.size(), c["results"].size());
  for (std::size_t i = 0; i < answer.results.size(); ++i) {
    EXPECT_EQ(answer.results[i].shape(), c["results"][i]["shape"].get<Shape>()) << "result " << i;
    EXPECT_TRUE(close(answer.results[i], c["results"][i]["values"], "result " + std::to_string(i)));
    if (!create_graph) {
      EXPECT_FALSE(answer.results[i].requires_grad()) << "result " << i << " is not a constant";
    }
  }
  if (!create_graph) return;
  Tensor<double> total;
  for (std::size_t i = 0; i < answer.results.size(); ++i) {
    const Tensor<double> term = sum(answer.results[i] * tensor_of(c["results"][i]["shape"], c["weights"][i]));
    total = i == 0 ? term : total + term;
  }
  const auto second = outer.gradient(total, leaves);
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    EXPECT_TRUE(close(second[k], c["second"][k], "derivative of the results w.r.t. tensor " + std::to_string(k)));
  }
}

TEST(FunctionalTransformsAgainstPyTorch, GeneratedCases) {
  const nlohmann::json cases = pytorch_cases();
  ASSERT_GE(cases["cases"].size(), 32u);
  for (const auto& c : cases["cases"]) {
    SCOPED_TRACE("case " + c["id"].dump() + ": " + c["transform"].get<std::string>() + " of " +
                 c["function"].get<std::string>() + ", inputs " + c["alias"].dump() + ", create_graph " +
                 c["create_graph"].dump() + " (torch " + cases["torch"].get<std::string>() + ")");
    check_case(c);
  }
}

}  // namespace
}  // namespace tapegrad::testing
