#include <memory>

#include "autograd/ops/activation.h"
#include "autograd/ops/reduce.h"
#include "autograd/tape.h"
#include "nn/containers.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "tests/support/nn_support.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using testing::names_of;

using testing::throws_with;

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

}  // namespace
}  // namespace tapegrad
