#include <memory>

#include "autograd/core/anomaly.h"
#include "autograd/ops/activation.h"
#include "autograd/ops/pointwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "nn/containers.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/transformer/transformer.h"
#include "tests/support/nn_support.h"
#include "tests/support/reference.h"
#include "tests/support/tied_model.h"

namespace tapegrad {
namespace {

using testing::names_of;


// in -> hidden -> out, with dropout, as a user would write a module.
class TwoLayer : public nn::Module<double> {
 public:
  TwoLayer(std::size_t in, std::size_t hidden, std::size_t out, Generator& gen)
      : fc1(register_module("fc1", std::make_shared<nn::Linear<double>>(in, hidden, gen))),
        drop(register_module("drop", std::make_shared<nn::Dropout<double>>(gen, 0.5))),
        fc2(register_module("fc2", std::make_shared<nn::Linear<double>>(hidden, out, gen, /*bias=*/false))) {}
  std::string type_name() const override { return "TwoLayer"; }
  Tensor<double> forward(const Tensor<double>& x) { return (*fc2)((*drop)(relu((*fc1)(x)))); }

  std::shared_ptr<nn::Linear<double>> fc1;
  std::shared_ptr<nn::Dropout<double>> drop;
  std::shared_ptr<nn::Linear<double>> fc2;
};


TEST(Module, NamedParametersUseDottedNamesInRegistrationOrder) {
  Generator gen(0);
  TwoLayer net(3, 4, 2, gen);
  EXPECT_EQ(names_of(net), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_EQ(net.num_parameters(), 4u * 3 + 4 + 2 * 4);
  for (const auto& p : net.parameters()) EXPECT_TRUE(p.requires_grad());
}

TEST(Module, ParameterTensorsAreNamedByTheirDottedPath) {
  Generator gen(0);
  TwoLayer model(2, 3, 2, gen);
  nn::Sequential<double> outer;
  outer.push_back(std::make_shared<nn::Linear<double>>(2, 2, gen));
  for (const auto& [path, tensor] : model.named_parameters()) EXPECT_EQ(tensor.name(), path);
  for (const auto& [path, tensor] : outer.named_parameters()) EXPECT_EQ(tensor.name(), path);
  EXPECT_EQ(model.fc1->weight().name(), "fc1.weight");
  // Also through containers filled after they were registered (the Transformer's layer lists).
  nn::transformer::Transformer<double> transformer(5, 5, 4, 0, 8, 2, 16, 2, 0.0, 1e-5, gen);
  for (const auto& [path, tensor] : transformer.named_parameters()) EXPECT_EQ(tensor.name(), path);
  // ... and a stack used on its own, not inside a Transformer.
  nn::transformer::TransformerEncoder<double> encoder(5, 5, 0, 4, 2, 8, 2, 0.0, 1e-5, gen);
  nn::transformer::TransformerDecoder<double> decoder(5, 5, 0, 4, 2, 8, 2, 0.0, 1e-5, gen);
  for (const auto& [path, tensor] : encoder.named_parameters()) EXPECT_EQ(tensor.name(), path);
  for (const auto& [path, tensor] : decoder.named_parameters()) EXPECT_EQ(tensor.name(), path);
  EXPECT_EQ(encoder.encoder_layers()[1].multi_head_attention().W_q().name(),
            "encoder_layers.1.multi_head_attention.W_q");
  // ... so an in-place edit between forward and backward names the parameter as state_dict does.
  GradientTape tape;
  const auto loss = sum((*model.fc1)(Tensor<double>::ones({1, 2})));
  Tensor<double> weight = model.fc1->weight();
  weight.mutable_value()(0, 0) = 5.0;
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(loss); }, {"'fc1.weight'", "modified in place"}));
}

// An anomaly report names a parameter deep in a Transformer by its state_dict key.
TEST(Module, AnomalyReportNamesAParameterByItsDottedPath) {
  Generator gen(0);
  nn::transformer::Transformer<double> transformer(5, 5, 4, 0, 8, 2, 16, 2, 0.0, 1e-5, gen);
  Tensor<double> weight;
  for (const auto& [path, tensor] : transformer.named_parameters()) {
    if (path == "encoder.encoder_layers.0.ffn.linear1.weight") weight = tensor;
  }
  ASSERT_TRUE(weight.defined());
  weight.mutable_value() = xt::abs(weight.value());  // sqrt of every entry is finite...
  weight.mutable_value()(0, 0) = 0.0;                 // ... and its gradient at 0 is not
  const DetectAnomalyGuard anomaly;
  GradientTape tape;
  const auto loss = sum(sqrt(weight));
  EXPECT_TRUE(throws_with<AnomalyError>([&] { tape.backward(loss); },
                                        {"the gradient of the leaf 'encoder.encoder_layers.0.ffn.linear1.weight'"}));
}

TEST(Module, ContainersNameChildrenByPosition) {
  Generator gen(0);
  nn::ModuleList<double, nn::Linear<double>> list;
  list.push_back(std::make_shared<nn::Linear<double>>(2, 2, gen));
  list.push_back(std::make_shared<nn::Linear<double>>(2, 3, gen));
  EXPECT_EQ(names_of(list), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
  EXPECT_EQ(list[1].out_features(), 3u);
}

TEST(Module, TrainAndEvalReachEveryChild) {
  Generator gen(0);
  TwoLayer net(3, 4, 2, gen);
  EXPECT_TRUE(net.drop->is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  EXPECT_FALSE(net.drop->is_training());
  net.train();
  EXPECT_TRUE(net.fc2->is_training());
}

TEST(Module, ZeroGradDropsEveryParameterGradient) {
  Generator gen(0);
  TwoLayer net(3, 4, 2, gen);
  net.eval();
  {
    GradientTape tape;
    tape.backward(sum(net.forward(Tensor<double>::ones({5, 3}))));
  }
  for (const auto& p : net.parameters()) EXPECT_TRUE(p.has_grad());
  net.zero_grad();
  for (const auto& p : net.parameters()) EXPECT_FALSE(p.has_grad());
}

TEST(Module, StateDictRoundTripsIntoAFreshModule) {
  Generator g1(1), g2(2);
  TwoLayer a(3, 4, 2, g1), b(3, 4, 2, g2);
  EXPECT_NE(a.fc1->weight().value(), b.fc1->weight().value());
  b.load_state_dict(a.state_dict());
  for (const auto& [name, value] : a.state_dict()) EXPECT_EQ(b.state_dict().at(name), value) << name;
  // Loading copies: changing the source afterwards does not reach the loaded module.
  a.fc1->weight().node()->value.fill(7.0);
  EXPECT_NE(b.fc1->weight().value()(0, 0), 7.0);
}

TEST(Module, StrictLoadNamesMissingAndUnexpectedKeys) {
  Generator gen(0);
  TwoLayer net(3, 4, 2, gen);
  auto state = net.state_dict();
  state.erase("fc1.bias");
  state["fc3.weight"] = xt::zeros<double>({1});
  EXPECT_TRUE(throws_with<ValueError>([&] { net.load_state_dict(state); },
                                      {"load_state_dict", "missing keys [fc1.bias]", "unexpected keys [fc3.weight]"}));
  const auto result = net.load_state_dict(state, /*strict=*/false);
  EXPECT_EQ(result.missing_keys, std::vector<std::string>{"fc1.bias"});
  EXPECT_EQ(result.unexpected_keys, std::vector<std::string>{"fc3.weight"});
}

TEST(Module, MisShapedKeyThrowsAndChangesNothing) {
  Generator gen(0);
  TwoLayer net(3, 4, 2, gen);
  const auto before = net.state_dict();
  auto state = before;
  state["fc1.bias"] = xt::ones<double>({4});
  state["fc2.weight"] = xt::zeros<double>({4, 2});
  EXPECT_TRUE(throws_with<ShapeError>([&] { net.load_state_dict(state, false); }, {"'fc2.weight'", "[4,2]", "[2,4]"}));
  EXPECT_EQ(net.state_dict(), before);
}

TEST(Module, SummaryShowsTreeShapesAndCounts) {
  Generator gen(0);
  TwoLayer net(3, 4, 2, gen);
  const std::string s = net.summary();
  for (const char* fragment : {"TwoLayer (24 parameters)", "fc1: Linear (16 parameters)", "weight [4,3]", "bias [4]",
                               "drop: Dropout (0 parameters)", "fc2: Linear (8 parameters)", "Total parameters: 24"}) {
    EXPECT_NE(s.find(fragment), std::string::npos) << s << "\nlacks " << fragment;
  }
}

TEST(Module, GeneratorsAreListedByName) {
  Generator gen(0);
  TwoLayer net(3, 4, 2, gen);
  const auto gens = net.named_generators();
  ASSERT_EQ(gens.size(), 1u);
  EXPECT_EQ(gens[0].first, "drop.stream");
}

// ---- shared (tied) parameters ----------------------------------------------------------------

std::vector<std::string> all_names_of(const nn::Module<double>& m) {
  std::vector<std::string> names;
  for (const auto& [name, t] : m.named_parameters(/*remove_duplicate=*/false)) names.push_back(name);
  return names;
}

std::vector<std::string> keys_of(const nn::StateDict<double>& state) {
  std::vector<std::string> keys;
  for (const auto& entry : state) keys.push_back(entry.first);
  return keys;
}

TEST(SharedParameters, TiedWeightIsOneParameterUnderItsFirstName) {
  Generator gen(0);
  testing::TiedLm<double> lm(5, 3, gen);
  EXPECT_EQ(names_of(lm), std::vector<std::string>{"embed.weight"});
  EXPECT_EQ(all_names_of(lm), (std::vector<std::string>{"embed.weight", "generator.weight"}));
  EXPECT_EQ(lm.parameters().size(), 1u);
  EXPECT_EQ(lm.num_parameters(), 5u * 3);
  EXPECT_NE(lm.summary().find("Total parameters: 15\n"), std::string::npos) << lm.summary();
  // The state dict keeps every name, so it maps one to one onto the PyTorch model's.
  EXPECT_EQ(keys_of(lm.state_dict()), (std::vector<std::string>{"embed.weight", "generator.weight"}));
  // The tensor is named by its first dotted path; its second owner did not rename it.
  EXPECT_EQ(lm.embed->weight().name(), "embed.weight");
}

TEST(SharedParameters, SameLinearTwiceInASequentialIsOneModule) {
  Generator gen(0);
  auto linear = std::make_shared<nn::Linear<double>>(2, 2, gen);
  nn::Sequential<double> seq({linear, linear});
  EXPECT_EQ(names_of(seq), (std::vector<std::string>{"0.weight", "0.bias"}));
  EXPECT_EQ(all_names_of(seq), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
  EXPECT_EQ(seq.num_parameters(), 2u * 2 + 2);
  EXPECT_EQ(keys_of(seq.state_dict()), (std::vector<std::string>{"0.bias", "0.weight", "1.bias", "1.weight"}));
}

TEST(SharedParameters, GradientIsTheSumOverBothUsesAndZeroGradReachesIt) {
  Generator gen(3);
  testing::TiedLm<double> lm(5, 3, gen);
  const IndexArray tokens = {0, 3, 4, 3};
  const IndexArray targets = {3, 4, 0, 1};
  {
    GradientTape tape;
    tape.backward(cross_entropy(lm.forward(tokens), targets));
  }
  EXPECT_LT(testing::max_abs_diff(lm.embed->weight().grad(), testing::untied_gradient_sum(lm, tokens, targets)), 1e-14);
  lm.zero_grad();
  EXPECT_FALSE(lm.embed->weight().has_grad());
}

TEST(SharedParameters, LoadWritesEveryNameIntoTheOneTensor) {
  Generator gen(0);
  testing::TiedLm<double> lm(5, 3, gen);
  auto state = lm.state_dict();
  const xt::xarray<double> fresh = xt::ones<double>({5, 3}) * 0.25;
  state["embed.weight"] = state["generator.weight"] = fresh;
  lm.load_state_dict(state);
  EXPECT_EQ(lm.embed->weight().value(), fresh);
  EXPECT_TRUE(lm.embed->weight().same_node(lm.named_parameters(false)[1].second));  // still tied
}

TEST(SharedParameters, LoadWithDifferentValuesUnderTheTwoNamesThrowsAndChangesNothing) {
  Generator gen(0);
  testing::TiedLm<double> lm(5, 3, gen);
  const auto before = lm.state_dict();
  auto state = before;
  state["generator.weight"] = xt::zeros<double>({5, 3});
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { lm.load_state_dict(state); },
      {"TiedLm", "'embed.weight' and 'generator.weight'", "shared", "different values"}));
  EXPECT_EQ(lm.state_dict(), before);
  // NaN equals NaN here: one tensor holding a NaN saves the same bits under both names.
  state["generator.weight"](0, 0) = std::nan("");
  state["embed.weight"] = state["generator.weight"];
  EXPECT_NO_THROW(lm.load_state_dict(state));
}

// A module that registers what it is given (register_module is protected).
struct Holder : nn::Module<double> {
  std::string type_name() const override { return "Holder"; }
  void hold(const std::string& name, std::shared_ptr<nn::Module<double>> child) { register_module(name, child); }
};

TEST(SharedParameters, AModuleThatWouldContainItselfIsRejectedAtRegistration) {
  auto seq = std::make_shared<nn::Sequential<double>>();
  EXPECT_TRUE(throws_with<ValueError>([&] { seq->push_back(seq); },
                                      {"Sequential", "module '0' (Sequential) is this Sequential itself"}));
  EXPECT_EQ(seq->size(), 0u);
  // Through a descendant: outer holds inner, then inner is given outer.
  auto outer = std::make_shared<Holder>();
  auto inner = std::make_shared<nn::ModuleList<double>>();
  outer->hold("inner", inner);
  EXPECT_TRUE(throws_with<ValueError>([&] { inner->push_back(outer); },
                                      {"ModuleList", "module '0' (Holder) contains this ModuleList"}));
  EXPECT_TRUE(outer->named_parameters().empty());  // no cycle was left behind to recurse into
  // Sharing a module in two places is not a cycle.
  Generator gen(0);
  auto linear = std::make_shared<nn::Linear<double>>(2, 2, gen);
  outer->hold("a", linear);
  inner->push_back(linear);
  EXPECT_EQ(names_of(*outer), (std::vector<std::string>{"inner.0.weight", "inner.0.bias"}));
}

}  // namespace
}  // namespace tapegrad
