#include <cmath>
#include <memory>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "nn/activation.h"
#include "nn/containers.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/init.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/masks.h"
#include "nn/positional_encoding.h"
#include <xtensor/xsort.hpp>
#include <xtensor/xview.hpp>

#include "tests/support/nn_support.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using testing::with_parameters;


TEST(Linear, ForwardMatchesANaiveLoopAndWeightIsOutByIn) {
  Generator gen(0);
  nn::Linear<double> lin(3, 2, gen);
  EXPECT_EQ(lin.weight().shape(), (Shape{2, 3}));
  const auto x = random_tensor({4, 3}, 1);
  const auto y = lin(x);
  ASSERT_EQ(y.shape(), (Shape{4, 2}));
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t o = 0; o < 2; ++o) {
      double expected = lin.bias().value()(o);
      for (std::size_t k = 0; k < 3; ++k) expected += x.value()(i, k) * lin.weight().value()(o, k);
      EXPECT_NEAR(y.value()(i, o), expected, 1e-12);
    }
}

TEST(Linear, GradcheckInputAndParametersOverLeadingShapes) {
  for (const Shape& shape : std::vector<Shape>{{3}, {2, 3}, {2, 1, 3}}) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(format_shape(shape) + (bias ? " bias" : " no bias"));
      Generator gen(1);
      nn::Linear<double> lin(3, 2, gen, bias);
      EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return lin(x[0]); }, with_parameters({random_tensor(shape, 2)}, lin)));
    }
  }
}

TEST(Linear, InitialisationBoundsArePyTorchs) {
  Generator gen(3);
  nn::Linear<double> lin(400, 300, gen);
  const double bound = 1.0 / std::sqrt(400.0);
  EXPECT_LE(xt::amax(xt::abs(lin.weight().value()))(), bound);
  EXPECT_GT(xt::amax(xt::abs(lin.weight().value()))(), 0.99 * bound);  // the whole range is used
  EXPECT_LE(xt::amax(xt::abs(lin.bias().value()))(), bound);
  EXPECT_EQ(lin.num_parameters(), 400u * 300 + 300);
}

TEST(Linear, WrongInputWidthIsAShapeError) {
  Generator gen(0);
  nn::Linear<double> lin(3, 2, gen);
  EXPECT_TRUE(throws_with<ShapeError>([&] { lin(random_tensor({2, 4}, 1)); }, {"Linear(3, 2)", "[2,4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::Linear<double>(0, 2, gen); }, {"Linear", "positive"}));
}

TEST(Init, XavierUniformBound) {
  Generator gen(4);
  auto w = Tensor<double>::zeros({200, 100});
  nn::init::xavier_uniform_(w, gen);
  const double bound = std::sqrt(6.0 / 300.0);
  EXPECT_LE(xt::amax(xt::abs(w.value()))(), bound);
  EXPECT_GT(xt::amax(xt::abs(w.value()))(), 0.99 * bound);
  EXPECT_EQ(nn::init::fans(Tensor<double>::zeros({5, 3, 2})), (std::pair<std::size_t, std::size_t>{6, 10}));
}

TEST(Init, ConstantZerosAndOnesFillInPlaceAsAnEdit) {
  Generator gen(5);
  auto w = Tensor<double>::uniform({2, 3}, gen, -1.0, 1.0, true);
  const auto version = w.version();
  nn::init::constant_(w, 0.25);
  EXPECT_EQ(w.value(), xt::xarray<double>(xt::full_like(w.value(), 0.25)));
  nn::init::ones_(w);
  EXPECT_EQ(w.value(), xt::xarray<double>(xt::ones<double>({2, 3})));
  nn::init::zeros_(w);
  EXPECT_EQ(w.value(), xt::xarray<double>(xt::zeros<double>({2, 3})));
  EXPECT_EQ(w.version(), version + 3);  // each one an in-place edit the tape can detect
  EXPECT_TRUE(w.requires_grad());
}

TEST(Embedding, PadRowStartsZeroAndGetsNoGradient) {
  Generator gen(0);
  nn::Embedding<double> emb(5, 3, gen, /*padding_idx=*/0);
  EXPECT_EQ(xt::amax(xt::abs(xt::view(emb.weight().value(), 0, xt::all())))(), 0.0);
  EXPECT_GT(xt::amax(xt::abs(emb.weight().value()))(), 0.0);
  GradientTape tape;
  const auto y = emb(IndexArray{{0, 2, 2}, {4, 0, 1}});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 3}));
  tape.backward(sum(y));
  const auto& g = emb.weight().grad();
  EXPECT_EQ(xt::view(g, 0, xt::all()), xt::zeros<double>({3}));
  EXPECT_EQ(xt::view(g, 2, xt::all()), xt::xarray<double>({2.0, 2.0, 2.0}));  // index 2 used twice
  EXPECT_EQ(xt::view(g, 3, xt::all()), xt::zeros<double>({3}));
}

TEST(Embedding, NegativePaddingIndexCountsFromTheEnd) {
  Generator gen(0);
  nn::Embedding<double> emb(5, 3, gen, -1);
  EXPECT_EQ(emb.padding_idx(), 4);
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::Embedding<double>(5, 3, gen, 5); }, {"padding_idx 5", "5 embeddings"}));
}

TEST(LayerNormModule, ParametersAndGradcheck) {
  nn::LayerNorm<double> ln(Shape{4});
  EXPECT_EQ(ln.state_dict().at("weight"), xt::ones<double>({4}));
  EXPECT_EQ(ln.state_dict().at("bias"), xt::zeros<double>({4}));
  Generator gen(5);
  nn::init::normal_(const_cast<Tensor<double>&>(ln.weight()), 1.0, 0.5, gen);
  EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return ln(x[0]); }, with_parameters({random_tensor({3, 4}, 6)}, ln)));
  nn::LayerNorm<double> plain(4, 1e-5, /*elementwise_affine=*/false);
  EXPECT_EQ(plain.num_parameters(), 0u);
}

TEST(DropoutModule, ActiveInTrainingIdentityInEval) {
  Generator gen(0);
  nn::Dropout<double> drop(gen, 0.5);
  const auto x = Tensor<double>::ones({1000});
  const auto y = drop(x);
  std::size_t zeros = 0;
  for (double v : y.value()) {
    EXPECT_TRUE(v == 0.0 || v == 2.0);
    zeros += v == 0.0;
  }
  EXPECT_GT(zeros, 400u);
  EXPECT_LT(zeros, 600u);
  drop.eval();
  EXPECT_EQ(drop(x).value(), x.value());
}

TEST(DropoutModule, FollowsTheOpsRuleForP) {
  Generator gen(0);
  nn::Dropout<double> all(gen, 1.0);  // as torch.nn.Dropout(1.0): zeros in training
  const auto x = Tensor<double>::ones({4});
  EXPECT_EQ(all(x).value(), (xt::zeros<double>({4})));
  all.eval();
  EXPECT_EQ(all(x).value(), x.value());
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::Dropout<double>(gen, 1.5); }, {"Dropout", "[0, 1]", "p = 1.5"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::Dropout<double>(gen, -0.5); }, {"Dropout", "[0, 1]", "p = -0.5"}));
}

TEST(DropoutModule, SameConstructionSeedSameMasks) {
  Generator g1(9), g2(9);
  nn::Dropout<double> a(g1, 0.3), b(g2, 0.3);
  const auto x = Tensor<double>::ones({100});
  EXPECT_EQ(a(x).value(), b(x).value());
  EXPECT_NE(a(x).value(), a(x).value());  // the stream moves on
}

TEST(Activations, ModulesApplyTheirOps) {
  const Tensor<double> x(xt::xarray<double>{-1.0, 0.5, 2.0});
  EXPECT_EQ(nn::ReLU<double>()(x).value(), (xt::xarray<double>{0.0, 0.5, 2.0}));
  EXPECT_NEAR(nn::GELU<double>()(x).value()(2), 2.0 * 0.5 * (1.0 + std::erf(2.0 / std::sqrt(2.0))), 1e-12);
  const auto p = nn::Softmax<double>(0)(x).value();
  EXPECT_NEAR(p(0) + p(1) + p(2), 1.0, 1e-12);
  EXPECT_NEAR(p(2) / p(1), std::exp(1.5), 1e-9);
}

TEST(SequentialModule, ChainsChildrenAndNamesThemByPosition) {
  Generator gen(0);
  nn::Sequential<double> seq;
  seq.push_back(std::make_shared<nn::Linear<double>>(3, 4, gen));
  seq.push_back(std::make_shared<nn::ReLU<double>>());
  seq.push_back(std::make_shared<nn::Linear<double>>(4, 2, gen));
  std::vector<std::string> names;
  for (const auto& [name, t] : seq.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return seq(x[0]); }, with_parameters({random_tensor({2, 3}, 3, true, 0.2, 1.0)}, seq)));
}

TEST(PositionalEncodingModule, TableFollowsTheFormula) {
  const auto table = nn::sinusoidal_table<double>(50, 6);
  EXPECT_DOUBLE_EQ(table(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(table(0, 1), 1.0);
  EXPECT_DOUBLE_EQ(table(7, 0), std::sin(7.0));
  EXPECT_DOUBLE_EQ(table(7, 1), std::cos(7.0));
  EXPECT_DOUBLE_EQ(table(7, 2), std::sin(7.0 / std::pow(10000.0, 2.0 / 6.0)));
  EXPECT_DOUBLE_EQ(table(7, 5), std::cos(7.0 / std::pow(10000.0, 4.0 / 6.0)));
}

TEST(PositionalEncodingModule, AddsTheTableOverTheBatchAndPassesGradient) {
  nn::AddPositionalEncoding<double> pe(4, 10);
  const auto x = random_tensor({2, 3, 4}, 1);
  const auto y = pe(x);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 0; s < 3; ++s)
      for (std::size_t d = 0; d < 4; ++d) EXPECT_DOUBLE_EQ(y.value()(b, s, d), x.value()(b, s, d) + pe.table()(s, d));
  EXPECT_TRUE(passes_gradcheck([&](const Inputs& in) { return pe(in[0]); }, {x}));
  EXPECT_EQ(pe.num_parameters(), 0u);
  EXPECT_TRUE(throws_with<ShapeError>([&] { pe(random_tensor({1, 11, 4}, 1)); }, {"PositionalEncoding", "[1,11,4]"}));
}

TEST(Masks, PaddingMaskIsTrueOnRealTokensAndBroadcastsOverHeadsAndQueries) {
  const Mask mask = nn::create_padding_mask(IndexArray{{1, 2, 3, 0, 0}, {1, 2, 0, 0, 0}}).may_attend();
  EXPECT_EQ(mask.shape()[0], 2u);
  EXPECT_EQ(mask.shape()[3], 5u);
  EXPECT_EQ(xt::xarray<bool>(xt::view(mask, 0, 0, 0, xt::all())), (xt::xarray<bool>{true, true, true, false, false}));
  EXPECT_EQ(xt::xarray<bool>(xt::view(mask, 1, 0, 0, xt::all())), (xt::xarray<bool>{true, true, false, false, false}));
  EXPECT_TRUE(throws_with<ShapeError>([] { nn::create_padding_mask(IndexArray{1, 2}); }, {"create_padding_mask", "[2]"}));
}

TEST(Masks, LookAheadMaskLetsQueryISeeKeysUpToI) {
  EXPECT_EQ(nn::create_look_ahead_mask(3).may_attend(), (xt::xarray<bool>{{true, false, false}, {true, true, false}, {true, true, true}}));
}

}  // namespace
}  // namespace tapegrad
