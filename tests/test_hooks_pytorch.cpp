// Hooks against PyTorch on generated cases: tests/interop/hook_cases.py writes seeded random
// programs (mul, add, sub, tanh, exp, sigmoid, matmul, sum, mean over broadcast float64 leaves,
// one leaf passed twice to a binary op) with tensor hooks on leaves and intermediates (scale, add a
// constant, multiply by another tensor, observe, remove itself after its first call) and retained
// intermediates, walked as one backward, two backward calls accumulating, or gradient() with
// create_graph then the gradient of the sum of its results; and nn::Linear with forward and
// output-gradient hooks. PyTorch computes every gradient, hook call count and observed gradient;
// tapegrad replays each case and must agree to 1e-12 (relative; absolute below 1).
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <xtensor/xadapt.hpp>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "nn/linear.h"
#include "tests/support/reference.h"
#include "tests/support/temp_dir.h"

namespace tapegrad {
namespace {

using Array = xt::xarray<double>;
using Json = nlohmann::json;
using Values = std::vector<double>;

constexpr int kCases = 40;

// hook_cases.py's output, run once per process. Without python3-torch this throws: the comparison
// must not vanish from CI unnoticed.
const Json& pytorch_cases() {
  static const Json cases = [] {
    const testing_support::TempDir dir("hook_cases");
    const auto path = dir.path() / "cases.json";
    const std::string command =
        "/usr/bin/python3 -W ignore " HOOK_CASES_PY " " + std::to_string(kCases) + " > '" + path.string() + "'";
    if (std::system(command.c_str()) != 0) {
      throw std::runtime_error(command + " failed (python3-torch is a test dependency)");
    }
    std::ifstream in(path);
    return Json::parse(in);
  }();
  return cases;
}

Array to_array(const Json& shape, const Json& data) {
  const Values values = data.get<Values>();
  return xt::adapt(values, shape.get<std::vector<std::size_t>>());
}

Values flat(const Array& a) { return Values(a.begin(), a.end()); }

Values grad_or_zeros(const Tensor<double>& t) {
  return t.has_grad() ? flat(t.grad()) : Values(t.numel(), 0.0);
}

// Each element agrees to 1e-12 relative, absolute below 1 (where PyTorch and tapegrad sum in
// different orders, values near 0 differ by rounding of the larger terms).
void expect_close(const Values& got, const Json& expected, const std::string& what) {
  const auto want = expected.get<Values>();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]), 1e-12 * std::max(1.0, std::abs(want[i])))
        << what << " element " << i << ": tapegrad " << got[i] << ", PyTorch " << want[i];
  }
}

Tensor<double> evaluate(const std::string& op, const std::vector<Tensor<double>>& in) {
  if (op == "tanh") return tanh(in[0]);
  if (op == "exp") return exp(in[0]);
  if (op == "sigmoid") return sigmoid(in[0]);
  if (op == "sum") return sum(in[0]);
  if (op == "mean") return mean(in[0]);
  if (op == "mul") return in[0] * in[1];
  if (op == "add") return in[0] + in[1];
  if (op == "sub") return in[0] - in[1];
  if (op == "matmul") return matmul(in[0], in[1]);
  throw std::invalid_argument("hook_cases.py wrote an op this test does not know: " + op);
}

// The hooks a case registered, with what they saw; removes those still registered when it goes,
// so that leaf hooks holding each other's leaves are not a cycle that outlives the case.
struct CaseHooks {
  std::vector<std::pair<std::shared_ptr<Node<double>>, std::shared_ptr<std::uint64_t>>> registered;
  std::vector<int> calls;
  std::vector<std::vector<Values>> observed;
  ~CaseHooks() {
    for (const auto& [node, id] : registered) node->remove_hook(*id);
  }
};

void register_hook(const Json& spec, std::size_t index, const std::vector<Tensor<double>>& nodes, CaseHooks& hooks) {
  Tensor<double> target = nodes[spec["node"].get<std::size_t>()];
  const std::string kind = spec["kind"];
  const double c = spec["c"];
  int& calls = hooks.calls[index];
  auto id = std::make_shared<std::uint64_t>();
  if (kind == "observe") {
    std::vector<Values>& seen = hooks.observed[index];
    *id = target.register_hook([&calls, &seen](const Array& g) -> std::optional<Array> {
      ++calls;
      seen.push_back(flat(g));
      return std::nullopt;
    });
  } else if (kind == "once") {
    const std::weak_ptr<Node<double>> node = target.node();
    *id = target.register_hook([&calls, c, node, id](const Tensor<double>& g) -> std::optional<Tensor<double>> {
      ++calls;
      node.lock()->remove_hook(*id);
      return g * c;
    });
  } else {
    const Tensor<double> other = kind == "mul_by" ? nodes[spec["other"].get<std::size_t>()] : Tensor<double>();
    *id = target.register_hook([&calls, kind, c, other](const Tensor<double>& g) -> std::optional<Tensor<double>> {
      ++calls;
      if (kind == "scale") return g * c;
      if (kind == "add") return g + c;
      return g * other;
    });
  }
  hooks.registered.emplace_back(target.node(), id);
}

std::string describe(const Json& c) {
  return "case seed " + std::to_string(c["seed"].get<int>()) + " (" + c["mode"].get<std::string>() +
         "): ops " + c["ops"].dump() + ", loss " + c["loss"].dump() + ", hooks " + c["hooks"].dump() + ", retain " +
         c["retain"].dump();
}

// A walk's results as hook_cases.py records them: every leaf's gradient, every retained one's.
void expect_walk(const Json& expected, const std::vector<Values>& leaf_grads, const std::vector<Values>& retained,
                 const std::string& walk) {
  for (std::size_t i = 0; i < leaf_grads.size(); ++i) {
    expect_close(leaf_grads[i], expected["leaf_grads"][i], walk + ": leaf " + std::to_string(i));
  }
  for (std::size_t i = 0; i < expected["retained"].size(); ++i) {
    expect_close(retained[i], expected["retained"][i], walk + ": retained intermediate " + std::to_string(i));
  }
}

void replay(const Json& c) {
  SCOPED_TRACE(describe(c));
  const std::string mode = c["mode"];
  GradientTape tape(/*persistent=*/mode != "backward");
  std::vector<Tensor<double>> nodes, leaves;
  for (const auto& l : c["leaves"]) leaves.emplace_back(to_array(l["shape"], l["data"]), true);
  nodes = leaves;
  for (const auto& op : c["ops"]) {
    std::vector<Tensor<double>> in;
    for (const auto& i : op["in"]) in.push_back(nodes[i.get<std::size_t>()]);
    nodes.push_back(evaluate(op["op"].get<std::string>(), in));
  }
  Tensor<double> loss;
  for (const auto& n : c["loss"]) {
    const auto term = sum(nodes[n.get<std::size_t>()]);
    loss = loss.defined() ? loss + term : term;
  }
  CaseHooks hooks;
  hooks.calls.assign(c["hooks"].size(), 0);
  hooks.observed.resize(c["hooks"].size());
  for (std::size_t i = 0; i < c["hooks"].size(); ++i) register_hook(c["hooks"][i], i, nodes, hooks);
  std::vector<Tensor<double>> retained;
  for (const auto& n : c["retain"]) retained.push_back(nodes[n.get<std::size_t>()].retain_grad());

  const auto leaf_grads = [&] {
    std::vector<Values> out;
    for (const auto& l : leaves) out.push_back(grad_or_zeros(l));
    return out;
  };
  const auto retained_grads = [&] {
    std::vector<Values> out;
    for (const auto& r : retained) out.push_back(grad_or_zeros(r));
    return out;
  };
  const Json& walks = c["expected"]["walks"];
  if (mode == "create_graph") {
    const auto first = tape.gradient(loss, leaves, {.create_graph = true});
    std::vector<Values> first_values;
    Tensor<double> total;
    for (const auto& g : first) {
      first_values.push_back(flat(g.value()));
      total = total.defined() ? total + sum(g) : sum(g);
    }
    expect_walk(walks[0], first_values, retained_grads(), "first-order gradient()");
    std::vector<Values> second_values;
    for (const auto& g : tape.gradient(total, leaves)) second_values.push_back(flat(g.value()));
    expect_walk(walks[1], second_values, {}, "gradient() of the sum of the first");
  } else {
    for (std::size_t w = 0; w < walks.size(); ++w) {
      for (auto& r : retained) r.zero_grad();  // PyTorch's retained gradients accumulate; tapegrad keeps the latest walk's
      tape.backward(loss);
      expect_walk(walks[w], leaf_grads(), retained_grads(), "backward " + std::to_string(w + 1));
    }
  }
  EXPECT_EQ(hooks.calls, c["expected"]["calls"].get<std::vector<int>>()) << "hook calls";
  for (std::size_t i = 0; i < hooks.observed.size(); ++i) {
    const Json& want = c["expected"]["observed"][i];
    ASSERT_EQ(hooks.observed[i].size(), want.size()) << "gradients observed by hook " << i;
    for (std::size_t k = 0; k < want.size(); ++k) {
      expect_close(hooks.observed[i][k], want[k], "hook " + std::to_string(i) + " call " + std::to_string(k + 1));
    }
  }
}

TEST(HooksAgainstPyTorch, GeneratedTensorHookCases) {
  const Json& cases = pytorch_cases()["cases"];
  ASSERT_EQ(cases.size(), static_cast<std::size_t>(kCases));
  for (const auto& c : cases) replay(c);
}

// ---- module hooks (nn::Linear) ------------------------------------------------------------------

void replay_module(const Json& c) {
  SCOPED_TRACE("module case " + c["name"].get<std::string>());
  Generator gen(0);
  nn::Linear<double> lin(3, 2, gen);
  Tensor<double> weight = lin.weight(), bias = lin.bias();
  weight.mutable_value() = to_array(Json{2, 3}, c["weight"]);
  bias.mutable_value() = to_array(Json{2}, c["bias"]);
  const Tensor<double> leaf(to_array(Json{2, 2}, c["leaf"]), true);
  const double scale = c["c"];
  std::vector<Values> forward_observed, grad_observed;
  for (const std::string kind : c["forward_hooks"]) {
    lin.register_forward_hook([&, kind](std::span<const Tensor<double>> inputs,
                                        const Tensor<double>& output) -> std::optional<Tensor<double>> {
      if (kind == "scale") return output * scale;
      if (kind == "return_leaf") return leaf;
      for (const auto& x : inputs) forward_observed.push_back(flat(x.value()));
      forward_observed.push_back(flat(output.value()));
      return std::nullopt;
    });
  }
  for (const std::string kind : c["grad_hooks"]) {
    lin.register_output_grad_hook([&, kind](const Array& g) -> std::optional<Array> {
      if (kind == "scale") return Array(g * scale);
      grad_observed.push_back(flat(g));
      return std::nullopt;
    });
  }
  std::vector<Tensor<double>> inputs;
  for (const auto& x : c["inputs"]) inputs.emplace_back(to_array(Json{2, 3}, x), true);
  GradientTape tape;
  Tensor<double> loss;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const auto term = sum(tanh(lin(inputs[k]))) * static_cast<double>(k + 1);
    loss = loss.defined() ? loss + term : term;
  }
  tape.backward(loss);
  const Json& want = c["expected"];
  expect_close(grad_or_zeros(lin.weight()), want["weight_grad"], "weight");
  expect_close(grad_or_zeros(lin.bias()), want["bias_grad"], "bias");
  expect_close(grad_or_zeros(leaf), want["leaf_grad"], "the forward hook's leaf");
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    expect_close(grad_or_zeros(inputs[k]), want["input_grads"][k], "input " + std::to_string(k));
  }
  ASSERT_EQ(forward_observed.size(), want["forward_observed"].size() * 2) << "forward hook calls";
  for (std::size_t i = 0; i < want["forward_observed"].size(); ++i) {
    expect_close(forward_observed[2 * i], want["forward_observed"][i][0], "forward hook input");
    expect_close(forward_observed[2 * i + 1], want["forward_observed"][i][1], "forward hook output");
  }
  ASSERT_EQ(grad_observed.size(), want["grad_observed"].size()) << "output-gradient hook calls";
  for (std::size_t i = 0; i < grad_observed.size(); ++i) {
    expect_close(grad_observed[i], want["grad_observed"][i], "output gradient " + std::to_string(i));
  }
}

TEST(HooksAgainstPyTorch, LinearModuleHookCases) {
  for (const auto& c : pytorch_cases()["module_cases"]) replay_module(c);
}

}  // namespace
}  // namespace tapegrad
