// Adam, AdamW and SGD against torch.optim on the cases tests/interop/optim_reference.py generates
// (shapes, one of them empty, two parameter groups, a parameter without a gradient for a step,
// momentum, dampening, Nesterov, weight decay, amsgrad), and their state round trips.
#include <cstring>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "optim/adam.h"
#include "optim/sgd.h"
#include "tests/support/python.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using nlohmann::json;

// The script's cases, read once; nullopt when torch is missing.
const std::optional<json>& pytorch_cases() {
  static const std::optional<json> cases = []() -> std::optional<json> {
    const auto out = testing_support::run_python(OPTIM_REFERENCE_PY);
    if (!out) return std::nullopt;
    return json::parse(*out)["cases"];
  }();
  return cases;
}

#define SKIP_WITHOUT_TORCH()                                                              \
  if (!pytorch_cases()) GTEST_SKIP() << "python3-torch is not installed (.ci/install-deps)"

xt::xarray<double> array_of(const json& values, const json& shape) {
  xt::xarray<double> out = xt::xarray<double>::from_shape(shape.get<std::vector<std::size_t>>());
  const auto flat = values.get<std::vector<double>>();
  std::copy(flat.begin(), flat.end(), out.begin());
  return out;
}

// One case's parameters at their start values (fresh tensors on every call).
std::vector<Tensor<double>> start_tensors(const json& c) {
  std::vector<Tensor<double>> out;
  for (const auto& p : c["params"]) out.emplace_back(array_of(p["start"], p["shape"]), true);
  return out;
}

std::unique_ptr<optim::Optimizer<double>> optimizer_for(const json& c, const std::vector<Tensor<double>>& tensors) {
  std::vector<optim::ParamGroup<double>> groups;
  for (const auto& g : c["groups"]) {
    optim::NamedParameters<double> params;
    for (const std::size_t i : g["params"]) params.emplace_back(c["params"][i]["name"], tensors[i]);
    groups.push_back({params, g["lr"], g["weight_decay"]});
  }
  const json& o = c["options"];
  const std::string kind = c["kind"];
  if (kind == "sgd") {
    return std::make_unique<optim::SGD<double>>(
        groups, optim::SGDOptions{.lr = o["lr"], .momentum = o.value("momentum", 0.0), .dampening = o.value("dampening", 0.0),
                                  .weight_decay = o.value("weight_decay", 0.0), .nesterov = o.value("nesterov", false)});
  }
  const auto betas = o.value("betas", std::vector<double>{0.9, 0.999});
  const double eps = o.value("eps", 1e-8);
  const bool amsgrad = o.value("amsgrad", false);
  // The groups carry lr and weight_decay; the options' own are not read.
  if (kind == "adamw") {
    return std::make_unique<optim::AdamW<double>>(groups, optim::AdamWOptions{.betas = {betas[0], betas[1]}, .eps = eps, .amsgrad = amsgrad});
  }
  return std::make_unique<optim::Adam<double>>(groups, optim::AdamOptions{.betas = {betas[0], betas[1]}, .eps = eps, .amsgrad = amsgrad});
}

// Sets step `step`'s given gradients (a null one: the parameter has none that step) and steps.
void take_step(optim::Optimizer<double>& opt, std::vector<Tensor<double>>& tensors, const json& c, std::size_t step) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const json& g = c["grads"][step][i];
    tensors[i].zero_grad();
    if (!g.is_null()) tensors[i].set_grad(array_of(g, c["params"][i]["shape"]));
  }
  opt.step();
}

// Takes steps `first`, ... of case `c` and compares every parameter with torch's after each.
void expect_steps_match_torch(optim::Optimizer<double>& opt, std::vector<Tensor<double>>& tensors, const json& c,
                              std::size_t first) {
  for (std::size_t step = first; step < c["grads"].size(); ++step) {
    take_step(opt, tensors, c, step);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_LE(max_abs_diff(tensors[i].value(), array_of(c["after"][step][i], c["params"][i]["shape"])), 1e-12)
          << c["params"][i]["name"] << " after step " << step + 1;
    }
  }
}

// An empty array's data() may be null, which memcmp must not be given (even for 0 bytes).
bool bit_equal(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

TEST(OptimMatchesPyTorch, EveryStepOfEveryCase) {
  SKIP_WITHOUT_TORCH();
  ASSERT_GE(pytorch_cases()->size(), 9u);
  for (const json& c : *pytorch_cases()) {
    SCOPED_TRACE(c["name"].get<std::string>());
    auto tensors = start_tensors(c);
    expect_steps_match_torch(*optimizer_for(c, tensors), tensors, c, 0);
  }
}

// torch's state after `resume_at` steps, loaded into a fresh optimiser over torch's parameters at
// that point, continues torch's run: the state's names, step counts and buffers mean the same.
TEST(OptimMatchesPyTorch, PyTorchsStateContinuesItsRun) {
  SKIP_WITHOUT_TORCH();
  for (const json& c : *pytorch_cases()) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::size_t resume_at = c["resume_at"];
    std::vector<Tensor<double>> tensors;
    for (std::size_t i = 0; i < c["params"].size(); ++i) {
      tensors.emplace_back(array_of(c["after"][resume_at - 1][i], c["params"][i]["shape"]), true);
    }
    const auto opt = optimizer_for(c, tensors);
    optim::StateMap<double> state;
    for (const auto& [key, value] : c["state_at_resume"].items()) state[key] = array_of(value["values"], value["shape"]);
    opt->load_state(state);
    expect_steps_match_torch(*opt, tensors, c, resume_at);
  }
}

// state() after `resume_at` steps, loaded into a fresh optimiser over fresh tensors holding the
// same values, continues exactly as the uninterrupted run: every parameter and the final state,
// bit for bit.
TEST(OptimStateRoundTrip, ResumedRunEqualsTheUninterruptedOneBitForBit) {
  SKIP_WITHOUT_TORCH();
  for (const json& c : *pytorch_cases()) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::size_t resume_at = c["resume_at"], steps = c["grads"].size();
    auto whole = start_tensors(c);
    const auto whole_opt = optimizer_for(c, whole);
    auto first = start_tensors(c);
    const auto first_opt = optimizer_for(c, first);
    for (std::size_t step = 0; step < resume_at; ++step) take_step(*first_opt, first, c, step);
    std::vector<Tensor<double>> resumed;
    for (const auto& t : first) resumed.emplace_back(t.value(), true);
    const auto resumed_opt = optimizer_for(c, resumed);
    resumed_opt->load_state(first_opt->state());
    for (std::size_t step = 0; step < steps; ++step) {
      take_step(*whole_opt, whole, c, step);
      if (step < resume_at) continue;
      take_step(*resumed_opt, resumed, c, step);
      for (std::size_t i = 0; i < whole.size(); ++i) {
        EXPECT_TRUE(bit_equal(resumed[i].value(), whole[i].value())) << "parameter " << i << " after step " << step + 1;
      }
    }
    const auto whole_state = whole_opt->state(), resumed_state = resumed_opt->state();
    ASSERT_EQ(resumed_state.size(), whole_state.size());
    for (const auto& [key, value] : whole_state) {
      ASSERT_TRUE(resumed_state.count(key)) << key;
      EXPECT_TRUE(bit_equal(resumed_state.at(key), value)) << key;
    }
  }
}

}  // namespace
}  // namespace tapegrad
