// The reference Transformer's (nn/transformer/): scaled dot-product attention, per-head-weights
// multi-head attention, FFN, encoder/decoder layers and stacks (post-LN and pre-LN), and the
// encoder-decoder Transformer with its generator and masks.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include <xtensor/xview.hpp>

#include "autograd/ops/operators.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"
#include "nn/transformer/transformer.h"
#include "tests/support/nn_support.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

namespace tf = nn::transformer;
using testing::names_of;
using testing::with_parameters;
using Names = std::vector<std::string>;


// The entries of a state dict under "prefix." with the prefix removed.
nn::StateDict<double> sub_state(const nn::StateDict<double>& state, const std::string& prefix) {
  nn::StateDict<double> out;
  for (const auto& [name, value] : state)
    if (name.rfind(prefix + ".", 0) == 0) out.emplace(name.substr(prefix.size() + 1), value);
  return out;
}

// Every parameter set to fresh random values, so LayerNorm weights are not all 1 and biases not
// all 0 (a gradcheck or a comparison at the initial values could miss a swapped term).
void randomize(nn::Module<double>& m, std::uint64_t seed) {
  Generator gen(seed);
  for (auto p : m.parameters()) p.mutable_value() = Tensor<double>::uniform(p.shape(), gen, -0.8, 0.8).value();
}

// mask(b, i, j) with size-1 axes broadcasting; true = may attend.
bool allowed(const AttendMask& attend, std::size_t b, std::size_t i, std::size_t j) {
  const Mask& mask = attend.may_attend();
  const auto at = [&](std::size_t axis, std::size_t idx) { return mask.shape()[axis] == 1 ? 0 : idx; };
  return mask(at(0, b), at(1, i), at(2, j));
}

struct NaiveAttention {
  xt::xarray<double> output;   // [batch, seq_q, d_v]
  xt::xarray<double> weights;  // [batch, seq_q, seq_k]
};

// Plain-loop scaled dot-product attention over [batch, seq, features] arrays.
NaiveAttention naive_sdpa(const xt::xarray<double>& q, const xt::xarray<double>& k, const xt::xarray<double>& v,
                          const std::optional<AttendMask>& mask) {
  const std::size_t batch = q.shape()[0], sq = q.shape()[1], sk = k.shape()[1], dk = q.shape()[2], dv = v.shape()[2];
  NaiveAttention r{xt::zeros<double>({batch, sq, dv}), xt::zeros<double>({batch, sq, sk})};
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < sq; ++i) {
      std::vector<double> s(sk);
      double top = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < sk; ++j) {
        double dot = 0.0;
        for (std::size_t d = 0; d < dk; ++d) dot += q(b, i, d) * k(b, j, d);
        s[j] = (mask && !allowed(*mask, b, i, j)) ? -std::numeric_limits<double>::max() : dot / std::sqrt(double(dk));
        top = std::max(top, s[j]);
      }
      double total = 0.0;
      for (std::size_t j = 0; j < sk; ++j) total += std::exp(s[j] - top);
      for (std::size_t j = 0; j < sk; ++j) {
        r.weights(b, i, j) = std::exp(s[j] - top) / total;
        for (std::size_t d = 0; d < dv; ++d) r.output(b, i, d) += r.weights(b, i, j) * v(b, j, d);
      }
    }
  return r;
}

// x [batch, seq, d_model] times head `head` of W [h, d_model, d_k] -> [batch, seq, d_k].
xt::xarray<double> project_head(const xt::xarray<double>& x, const xt::xarray<double>& W, std::size_t head) {
  const std::size_t batch = x.shape()[0], seq = x.shape()[1], dm = x.shape()[2], dk = W.shape()[2];
  xt::xarray<double> out = xt::zeros<double>({batch, seq, dk});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t s = 0; s < seq; ++s)
      for (std::size_t l = 0; l < dk; ++l)
        for (std::size_t m = 0; m < dm; ++m) out(b, s, l) += x(b, s, m) * W(head, m, l);
  return out;
}

struct NaiveMultiHead {
  xt::xarray<double> output;   // [batch, seq_q, d_model]
  xt::xarray<double> weights;  // [batch, h, seq_q, seq_k]
};

// The paper's multi-head attention with plain loops, one head at a time, from the module's weights.
NaiveMultiHead naive_mha(const tf::MultiHeadAttention<double>& mha, const xt::xarray<double>& q,
                         const xt::xarray<double>& k, const xt::xarray<double>& v, const std::optional<AttendMask>& mask) {
  const std::size_t batch = q.shape()[0], sq = q.shape()[1], sk = k.shape()[1], h = mha.h(), dk = mha.d_k();
  const std::size_t dm = mha.d_model();
  xt::xarray<double> concat = xt::zeros<double>({batch, sq, h * dk});
  NaiveMultiHead r{xt::zeros<double>({batch, sq, dm}), xt::zeros<double>({batch, h, sq, sk})};
  for (std::size_t head = 0; head < h; ++head) {
    const auto a = naive_sdpa(project_head(q, mha.W_q().value(), head), project_head(k, mha.W_k().value(), head),
                              project_head(v, mha.W_v().value(), head), mask);
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < sq; ++i) {
        for (std::size_t l = 0; l < dk; ++l) concat(b, i, head * dk + l) = a.output(b, i, l);
        for (std::size_t j = 0; j < sk; ++j) r.weights(b, head, i, j) = a.weights(b, i, j);
      }
  }
  const auto& W = mha.linear().weight().value();
  const auto& bias = mha.linear().bias().value();
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < sq; ++i)
      for (std::size_t o = 0; o < dm; ++o) {
        r.output(b, i, o) = bias(o);
        for (std::size_t f = 0; f < h * dk; ++f) r.output(b, i, o) += concat(b, i, f) * W(o, f);
      }
  return r;
}

// [2, 3, 4] may-attend mask with a masked key in each row and one row of batch 1 masked but for one key.
AttendMask sample_mask_2x3x4() {
  return AttendMask(Mask{{{1, 1, 0, 1}, {1, 0, 1, 1}, {0, 1, 1, 1}}, {{1, 1, 1, 0}, {0, 0, 1, 0}, {1, 1, 0, 0}}});
}

// ---- ScaledDotProductAttention ----

TEST(ScaledDotProductAttention, ForwardMatchesNaiveLoopWithAndWithoutMask) {
  const auto q = random_tensor({2, 3, 5}, 1), k = random_tensor({2, 4, 5}, 2), v = random_tensor({2, 4, 2}, 3);
  tf::ScaledDotProductAttention<double> sdpa(5);
  for (const std::optional<AttendMask>& mask : {std::optional<AttendMask>{}, std::optional<AttendMask>{sample_mask_2x3x4()},
                                          std::optional<AttendMask>{Mask{{{1, 0, 1, 1}}}}}) {
    SCOPED_TRACE(mask ? format_shape(mask->may_attend().shape()) : "no mask");
    const auto out = sdpa(q, k, v, mask);
    const auto ref = naive_sdpa(q.value(), k.value(), v.value(), mask);
    ASSERT_EQ(out.shape(), (Shape{2, 3, 2}));
    EXPECT_LT(max_abs_diff(out.value(), ref.output), 1e-12);
    EXPECT_LT(max_abs_diff(sdpa.last_weights().value(), ref.weights), 1e-12);
  }
}

TEST(ScaledDotProductAttention, MaskedPositionsGetWeightExactlyZero) {
  tf::ScaledDotProductAttention<double> sdpa(5);
  const AttendMask mask = sample_mask_2x3x4();
  sdpa(random_tensor({2, 3, 5}, 4, true, -3, 3), random_tensor({2, 4, 5}, 5, true, -3, 3), random_tensor({2, 4, 2}, 6), mask);
  const auto& w = sdpa.last_weights().value();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 3; ++i) {
      double row = 0.0;
      for (std::size_t j = 0; j < 4; ++j) {
        if (!mask.may_attend()(b, i, j)) {
          EXPECT_EQ(w(b, i, j), 0.0) << b << "," << i << "," << j;
        }
        row += w(b, i, j);
      }
      EXPECT_NEAR(row, 1.0, 1e-12);
    }
  EXPECT_EQ(w(1, 1, 2), 1.0);  // the only key row (1, 1) may attend to
}

TEST(ScaledDotProductAttention, FullyMaskedRowGetsUniformWeightsAsTheSeed) {
  // Every score filled with lowest() is a row of equal finite values: uniform, not NaN.
  tf::ScaledDotProductAttention<float> sdpa(2);
  const Tensor<float> q(xt::xarray<float>{{{1.0f, 2.0f}}}), k(xt::xarray<float>{{{1.0f, 0.0f}, {0.0f, 3.0f}}});
  const auto out = sdpa(q, k, k, AttendMask(Mask{{{0, 0}}}));
  EXPECT_EQ(sdpa.last_weights().value(), (xt::xarray<float>{{{0.5f, 0.5f}}}));
  EXPECT_EQ(out.value(), (xt::xarray<float>{{{0.5f, 1.5f}}}));
}

TEST(ScaledDotProductAttention, MaskRankDifferentFromScoresIsAShapeError) {
  tf::ScaledDotProductAttention<double> sdpa(5);
  const auto q = random_tensor({2, 3, 5}, 1), k = random_tensor({2, 4, 5}, 2), v = random_tensor({2, 4, 2}, 3);
  EXPECT_TRUE(throws_with<ShapeError>([&] { sdpa(q, k, v, AttendMask(Mask{{1, 0, 1, 1}})); },
                                      {"ScaledDotProductAttention(d_k=5)", "mask has 2 dims [1,4]", "scores have 3 [2,3,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { sdpa(q, k, v, AttendMask(Mask(xt::ones<bool>({1, 1, 3, 4})))); },
                                      {"mask has 4 dims [1,1,3,4]", "[2,3,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { sdpa(q, k, v, AttendMask(Mask(xt::ones<bool>({2, 2, 4})))); },
                                      {"mask [2,2,4] does not broadcast", "[2,3,4]"}));
}

TEST(ScaledDotProductAttention, MismatchedQKVAreShapeErrors) {
  tf::ScaledDotProductAttention<double> sdpa(5);
  const auto q = random_tensor({2, 3, 5}, 1), k = random_tensor({2, 4, 5}, 2), v = random_tensor({2, 4, 2}, 3);
  EXPECT_TRUE(throws_with<ShapeError>([&] { sdpa(random_tensor({3, 5}, 1), k, v); }, {"ScaledDotProductAttention", "q [3,5]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { sdpa(q, random_tensor({2, 4, 4}, 2), v); }, {"d_k = 5", "k [2,4,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { sdpa(q, k, random_tensor({2, 3, 2}, 3)); }, {"sequence length", "v [2,3,2]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { sdpa(q, random_tensor({1, 4, 5}, 2), v); }, {"batch", "k [1,4,5]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { tf::ScaledDotProductAttention<double>(0); }, {"ScaledDotProductAttention", "d_k"}));
}

TEST(ScaledDotProductAttention, GradcheckQKVWithAndWithoutMask) {
  tf::ScaledDotProductAttention<double> sdpa(5);
  for (const std::optional<AttendMask>& mask : {std::optional<AttendMask>{}, std::optional<AttendMask>{sample_mask_2x3x4()},
                                          std::optional<AttendMask>{Mask{{{1, 1, 0, 1}}, {{0, 1, 1, 1}}}}}) {
    SCOPED_TRACE(mask ? format_shape(mask->may_attend().shape()) : "no mask");
    EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return sdpa(x[0], x[1], x[2], mask); },
                                 {random_tensor({2, 3, 5}, 1), random_tensor({2, 4, 5}, 2), random_tensor({2, 4, 2}, 3)}));
  }
}

TEST(ScaledDotProductAttention, WeightsKeepTheirGradientAfterBackward) {
  tf::ScaledDotProductAttention<double> sdpa(5);
  const auto q = random_tensor({2, 3, 5}, 1), k = random_tensor({2, 4, 5}, 2), v = random_tensor({2, 4, 2}, 3);
  const auto g = random_tensor({2, 3, 2}, 4, false);
  {
    GradientTape tape;
    tape.backward(sum(sdpa(q, k, v, sample_mask_2x3x4()) * g));
  }
  // L = sum(g * (A v))  =>  dL/dA[b, i, j] = sum_d g[b, i, d] v[b, j, d].
  ASSERT_TRUE(sdpa.last_weights().has_grad());
  xt::xarray<double> expected = xt::zeros<double>({2, 3, 4});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 4; ++j)
        for (std::size_t d = 0; d < 2; ++d) expected(b, i, j) += g.value()(b, i, d) * v.value()(b, j, d);
  EXPECT_LT(max_abs_diff(sdpa.last_weights().grad(), expected), 1e-12);
}

// ---- MultiHeadAttention ----

TEST(MultiHeadAttention, SelfAttentionMatchesNaivePerHeadLoopWithMask) {
  Generator gen(0);
  tf::MultiHeadAttention<double> mha(4, 2, gen);
  const auto x = random_tensor({2, 3, 4}, 1);
  const AttendMask mask(Mask{{{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}, {{1, 1, 0}, {0, 1, 0}, {1, 1, 0}}});
  for (const std::optional<AttendMask>& m : {std::optional<AttendMask>{}, std::optional<AttendMask>{mask}}) {
    SCOPED_TRACE(m ? "mask" : "no mask");
    const auto out = mha(x, x, x, m);
    const auto ref = naive_mha(mha, x.value(), x.value(), x.value(), m);
    ASSERT_EQ(out.shape(), (Shape{2, 3, 4}));
    EXPECT_LT(max_abs_diff(out.value(), ref.output), 1e-12);
    EXPECT_LT(max_abs_diff(mha.attention_weights().weights, ref.weights), 1e-12);
  }
}

TEST(MultiHeadAttention, CrossAttentionUsesEachTensorsOwnSequenceLength) {
  // The reference code views k and v with q's seq_len; with seq_q = 2 != seq_k = 3 that is wrong or fails.
  Generator gen(1);
  tf::MultiHeadAttention<double> mha(6, 3, gen);
  const auto q = random_tensor({2, 2, 6}, 1), kv = random_tensor({2, 3, 6}, 2), v = random_tensor({2, 3, 6}, 3);
  const AttendMask src_mask(Mask{{{1, 1, 0}}, {{1, 0, 1}}});  // [batch, 1, seq_k]: a padding mask
  for (const std::optional<AttendMask>& m : {std::optional<AttendMask>{}, std::optional<AttendMask>{src_mask}}) {
    SCOPED_TRACE(m ? "mask" : "no mask");
    const auto out = mha(q, kv, v, m);
    const auto ref = naive_mha(mha, q.value(), kv.value(), v.value(), m);
    ASSERT_EQ(out.shape(), (Shape{2, 2, 6}));
    EXPECT_LT(max_abs_diff(out.value(), ref.output), 1e-12);
    const auto attention = mha.attention_weights();
    ASSERT_EQ(Shape(attention.weights.shape().begin(), attention.weights.shape().end()), (Shape{2, 3, 2, 3}));
    EXPECT_LT(max_abs_diff(attention.weights, ref.weights), 1e-12);
  }
}

TEST(MultiHeadAttention, NoRepeatEinsumEqualsTheSeedsRepeatedEinsum) {
  // The reference code: q.repeat(h, 1, 1, 1) then einsum("hijk,hkl->hijl"); ours: einsum("ijk,hkl->hijl").
  auto x = random_tensor({2, 3, 4}, 1), W = random_tensor({2, 4, 2}, 2);
  GradientTape tape(/*persistent=*/true);
  const auto seed_way = einsum("hijk,hkl->hijl", expand(unsqueeze(x, 0), {2, 2, 3, 4}), W);
  const auto ours = einsum("ijk,hkl->hijl", x, W);
  EXPECT_LT(max_abs_diff(seed_way.value(), ours.value()), 1e-14);
  const auto g = random_tensor({2, 2, 3, 2}, 3, false);
  tape.backward(sum(seed_way * g));
  const xt::xarray<double> dx_seed = x.grad(), dW_seed = W.grad();
  x.zero_grad();
  W.zero_grad();
  tape.backward(sum(ours * g));
  EXPECT_LT(max_abs_diff(x.grad(), dx_seed), 1e-14);
  EXPECT_LT(max_abs_diff(W.grad(), dW_seed), 1e-14);
}

TEST(MultiHeadAttention, GradcheckSelfAndCrossWithAndWithoutMask) {
  Generator gen(2);
  tf::MultiHeadAttention<double> mha(4, 2, gen);
  const AttendMask causal(Mask{{{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}});  // [1, 3, 3], shared by the batch
  const AttendMask padding(Mask{{{1, 1, 0}}, {{1, 0, 1}}});         // [2, 1, 3]
  for (const std::optional<AttendMask>& m : {std::optional<AttendMask>{}, std::optional<AttendMask>{causal}}) {
    SCOPED_TRACE(m ? "self, causal mask" : "self, no mask");
    EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return mha(x[0], x[0], x[0], m); },
                                 with_parameters({random_tensor({2, 3, 4}, 3)}, mha)));
  }
  for (const std::optional<AttendMask>& m : {std::optional<AttendMask>{}, std::optional<AttendMask>{padding}}) {
    SCOPED_TRACE(m ? "cross, padding mask" : "cross, no mask");
    EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return mha(x[0], x[1], x[2], m); },
                                 with_parameters({random_tensor({2, 2, 4}, 4), random_tensor({2, 3, 4}, 5),
                                                  random_tensor({2, 3, 4}, 6)},
                                                 mha)));
  }
}

TEST(MultiHeadAttention, PerHeadWeightsAndTheirGradientsAreExposedBatchHeadMajor) {
  Generator gen(3);
  tf::MultiHeadAttention<double> mha(4, 2, gen);
  EXPECT_FALSE(mha.has_attention_weights());
  EXPECT_TRUE(throws_with<ValueError>([&] { mha.attention_weights(); }, {"MultiHeadAttention", "before the first forward"}));
  const auto q = random_tensor({2, 2, 4}, 1), kv = random_tensor({2, 3, 4}, 2);
  {
    GradientTape tape;
    tape.backward(sum(mha(q, kv, kv) * random_tensor({2, 2, 4}, 3, false)));
  }
  const auto attention = mha.attention_weights();
  ASSERT_TRUE(attention.grad.has_value());
  // The heads were computed as [h*batch, seq_q, seq_k], head-major: row head*batch + b.
  const auto& flat = mha.scaled_dot_product_attention().last_weights();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t head = 0; head < 2; ++head)
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j) {
          EXPECT_EQ(attention.weights(b, head, i, j), flat.value()(head * 2 + b, i, j));
          EXPECT_EQ((*attention.grad)(b, head, i, j), flat.grad()(head * 2 + b, i, j));
        }
  EXPECT_GT(xt::amax(xt::abs(*attention.grad))(), 0.0);
}

TEST(MultiHeadAttention, ParameterNamesShapesCountAndInitialisation) {
  Generator gen(4);
  tf::MultiHeadAttention<double> mha(16, 4, gen);
  // The reference Transformer's attribute order: W_k, W_q, W_v, then the children.
  EXPECT_EQ(names_of(mha), (Names{"W_k", "W_q", "W_v", "linear.weight", "linear.bias"}));
  EXPECT_EQ(mha.W_q().shape(), (Shape{4, 16, 4}));
  EXPECT_EQ(mha.linear().weight().shape(), (Shape{16, 16}));
  const std::size_t d_model = 16, h = 4, d_k = 4;
  EXPECT_EQ(mha.num_parameters(), 3 * h * d_model * d_k + h * d_k * d_model + d_model);
  // xavier_uniform of one head [d_model, d_k]: bound sqrt(6 / (d_model + d_k)).
  const double bound = std::sqrt(6.0 / 20.0);
  for (const auto* W : {&mha.W_q(), &mha.W_k(), &mha.W_v()}) {
    EXPECT_LE(xt::amax(xt::abs(W->value()))(), bound);
    EXPECT_GT(xt::amax(xt::abs(W->value()))(), 0.9 * bound);
  }
}

TEST(MultiHeadAttention, SeedShapesD512EightHeads) {
  // The annotated encoder-decoder: d_model 512, 8 heads of d_k = 64; outputs keep d_model.
  Generator gen(5);
  tf::MultiHeadAttention<float> mha(512, 8, gen);
  EXPECT_EQ(mha.W_v().shape(), (Shape{8, 512, 64}));
  const auto x = Tensor<float>::randn({2, 5, 512}, gen);
  EXPECT_EQ(mha(x, x, x).shape(), (Shape{2, 5, 512}));
  const auto weights = mha.attention_weights().weights;
  EXPECT_EQ(Shape(weights.shape().begin(), weights.shape().end()), (Shape{2, 8, 5, 5}));
}

TEST(MultiHeadAttention, BadArgumentsAreErrorsNamingTheShapes) {
  Generator gen(6);
  EXPECT_TRUE(throws_with<ValueError>([&] { tf::MultiHeadAttention<double>(6, 4, gen); },
                                      {"MultiHeadAttention", "d_model (6)", "h (4)"}));
  tf::MultiHeadAttention<double> mha(4, 2, gen);
  const auto x = random_tensor({2, 3, 4}, 1);
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(random_tensor({2, 3, 5}, 1), x, x); },
                                      {"MultiHeadAttention(d_model=4, h=2)", "q [2,3,5]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(x, x, random_tensor({2, 2, 4}, 1)); }, {"sequence length", "v [2,2,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(x, x, x, AttendMask(Mask(xt::ones<bool>({3, 3})))); }, {"mask_3d [3,3]", "[2, 3, 3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(x, x, x, AttendMask(Mask(xt::ones<bool>({3, 3, 3})))); }, {"mask_3d [3,3,3]"}));
}

// ---- FFN ----

TEST(FFN, ForwardIsLinear2ReluLinear1AndGradchecks) {
  Generator gen(7);
  tf::FFN<double> ffn(4, 8, gen);
  EXPECT_EQ(names_of(ffn), (Names{"linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"}));
  EXPECT_EQ(ffn.num_parameters(), 4u * 8 + 8 + 8 * 4 + 4);
  const auto x = random_tensor({2, 3, 4}, 1);
  const auto y = ffn(x);
  const auto &W1 = ffn.linear1().weight().value(), &b1 = ffn.linear1().bias().value();
  const auto &W2 = ffn.linear2().weight().value(), &b2 = ffn.linear2().bias().value();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 0; s < 3; ++s)
      for (std::size_t o = 0; o < 4; ++o) {
        double expected = b2(o);
        for (std::size_t f = 0; f < 8; ++f) {
          double hidden = b1(f);
          for (std::size_t i = 0; i < 4; ++i) hidden += W1(f, i) * x.value()(b, s, i);
          expected += W2(o, f) * std::max(hidden, 0.0);
        }
        EXPECT_NEAR(y.value()(b, s, o), expected, 1e-12);
      }
  EXPECT_TRUE(passes_gradcheck([&](const Inputs& in) { return ffn(in[0]); }, with_parameters({x}, ffn)));
}

// ---- encoder and decoder layers ----

const std::size_t kDModel = 4, kDFF = 8, kHeads = 2;

std::size_t mha_count(std::size_t d) { return 4 * d * d + d; }
std::size_t ffn_count(std::size_t d, std::size_t ff) { return 2 * d * ff + ff + d; }

TEST(TransformerEncoderLayer, ParameterNamesFollowTheSeed) {
  Generator gen(8);
  tf::TransformerEncoderLayer<double> layer(kDModel, kDFF, kHeads, 0.1, 1e-5, gen);
  EXPECT_EQ(names_of(layer), (Names{"multi_head_attention.W_k", "multi_head_attention.W_q", "multi_head_attention.W_v",
                                    "multi_head_attention.linear.weight", "multi_head_attention.linear.bias",
                                    "layer_norm_self_attention.weight", "layer_norm_self_attention.bias",
                                    "ffn.linear1.weight", "ffn.linear1.bias", "ffn.linear2.weight", "ffn.linear2.bias",
                                    "layer_norm_ffn.weight", "layer_norm_ffn.bias"}));
  EXPECT_EQ(layer.num_parameters(), mha_count(kDModel) + ffn_count(kDModel, kDFF) + 2 * 2 * kDModel);
}

TEST(TransformerEncoderLayer, PostAndPreLNComposeTheSublayersAsDocumented) {
  const AttendMask mask(Mask{{{1, 1, 0}}, {{1, 0, 1}}});
  const auto x = random_tensor({2, 3, 4}, 1);
  for (bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-LN" : "post-LN");
    Generator gen(9);
    tf::TransformerEncoderLayer<double> layer(kDModel, kDFF, kHeads, 0.3, 1e-5, gen, norm_first);
    randomize(layer, 10);
    layer.eval();
    // The same sublayers as stand-alone modules holding the layer's parameters.
    Generator other(11);
    tf::MultiHeadAttention<double> mha(kDModel, kHeads, other);
    tf::FFN<double> ffn(kDModel, kDFF, other);
    nn::LayerNorm<double> ln1(kDModel), ln2(kDModel);
    const auto state = layer.state_dict();
    mha.load_state_dict(sub_state(state, "multi_head_attention"));
    ffn.load_state_dict(sub_state(state, "ffn"));
    ln1.load_state_dict(sub_state(state, "layer_norm_self_attention"));
    ln2.load_state_dict(sub_state(state, "layer_norm_ffn"));
    Tensor<double> expected;
    if (norm_first) {
      const auto n = ln1(x);
      const auto y = x + mha(n, n, n, mask);
      expected = y + ffn(ln2(y));
    } else {
      const auto y = ln1(mha(x, x, x, mask) + x);
      expected = ln2(ffn(y) + y);
    }
    EXPECT_LT(max_abs_diff(layer(x, mask).value(), expected.value()), 1e-12);
  }
}

TEST(TransformerEncoderLayer, GradcheckPostAndPreLNWithAndWithoutMask) {
  const AttendMask mask(Mask{{{1, 1, 0}}});
  for (bool norm_first : {false, true}) {
    for (const std::optional<AttendMask>& m : {std::optional<AttendMask>{}, std::optional<AttendMask>{mask}}) {
      SCOPED_TRACE(std::string(norm_first ? "pre-LN" : "post-LN") + (m ? ", mask" : ", no mask"));
      Generator gen(12);
      tf::TransformerEncoderLayer<double> layer(kDModel, kDFF, kHeads, 0.1, 1e-5, gen, norm_first);
      randomize(layer, 13);
      layer.eval();
      EXPECT_TRUE(passes_gradcheck([&](const Inputs& in) { return layer(in[0], m); },
                                   with_parameters({random_tensor({1, 3, 4}, 14)}, layer)));
    }
  }
}

TEST(TransformerDecoderLayer, ParameterNamesFollowTheSeed) {
  Generator gen(15);
  tf::TransformerDecoderLayer<double> layer(kDModel, kDFF, kHeads, 0.1, 1e-5, gen);
  EXPECT_EQ(names_of(layer),
            (Names{"self_attention.W_k", "self_attention.W_q", "self_attention.W_v", "self_attention.linear.weight",
                   "self_attention.linear.bias", "layer_norm_self_attention.weight", "layer_norm_self_attention.bias",
                   "src_tgt_attention.W_k", "src_tgt_attention.W_q", "src_tgt_attention.W_v",
                   "src_tgt_attention.linear.weight", "src_tgt_attention.linear.bias",
                   "layer_norm_src_tgt_attention.weight", "layer_norm_src_tgt_attention.bias", "ffn.linear1.weight",
                   "ffn.linear1.bias", "ffn.linear2.weight", "ffn.linear2.bias", "layer_norm_ffn.weight",
                   "layer_norm_ffn.bias"}));
  EXPECT_EQ(layer.num_parameters(), 2 * mha_count(kDModel) + ffn_count(kDModel, kDFF) + 3 * 2 * kDModel);
}

TEST(TransformerDecoderLayer, PostAndPreLNComposeTheSublayersAsDocumented) {
  const AttendMask self_mask(Mask{{{1, 0}, {1, 1}}}), src_mask(Mask{{{1, 1, 0}}, {{1, 0, 1}}});
  const auto tgt = random_tensor({2, 2, 4}, 1), src = random_tensor({2, 3, 4}, 2);
  for (bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-LN" : "post-LN");
    Generator gen(16);
    tf::TransformerDecoderLayer<double> layer(kDModel, kDFF, kHeads, 0.3, 1e-5, gen, norm_first);
    randomize(layer, 17);
    layer.eval();
    Generator other(18);
    tf::MultiHeadAttention<double> self_attention(kDModel, kHeads, other), src_tgt(kDModel, kHeads, other);
    tf::FFN<double> ffn(kDModel, kDFF, other);
    nn::LayerNorm<double> ln1(kDModel), ln2(kDModel), ln3(kDModel);
    const auto state = layer.state_dict();
    self_attention.load_state_dict(sub_state(state, "self_attention"));
    src_tgt.load_state_dict(sub_state(state, "src_tgt_attention"));
    ffn.load_state_dict(sub_state(state, "ffn"));
    ln1.load_state_dict(sub_state(state, "layer_norm_self_attention"));
    ln2.load_state_dict(sub_state(state, "layer_norm_src_tgt_attention"));
    ln3.load_state_dict(sub_state(state, "layer_norm_ffn"));
    Tensor<double> expected;
    if (norm_first) {
      const auto n1 = ln1(tgt);
      const auto y = tgt + self_attention(n1, n1, n1, self_mask);
      const auto z = y + src_tgt(ln2(y), src, src, src_mask);
      expected = z + ffn(ln3(z));
    } else {
      const auto y = ln1(tgt + self_attention(tgt, tgt, tgt, self_mask));
      const auto z = ln2(y + src_tgt(y, src, src, src_mask));
      expected = ln3(z + ffn(z));
    }
    EXPECT_LT(max_abs_diff(layer(tgt, src, src_mask, self_mask).value(), expected.value()), 1e-12);
  }
}

TEST(TransformerDecoderLayer, GradcheckPostAndPreLNWithAndWithoutMasks) {
  const AttendMask self_mask(Mask{{{1, 0}, {1, 1}}}), src_mask(Mask{{{1, 0, 1}}});
  for (bool norm_first : {false, true}) {
    for (bool masked : {false, true}) {
      SCOPED_TRACE(std::string(norm_first ? "pre-LN" : "post-LN") + (masked ? ", masks" : ", no masks"));
      Generator gen(19);
      tf::TransformerDecoderLayer<double> layer(kDModel, kDFF, kHeads, 0.1, 1e-5, gen, norm_first);
      randomize(layer, 20);
      layer.eval();
      const std::optional<AttendMask> ms = masked ? std::optional<AttendMask>{src_mask} : std::nullopt;
      const std::optional<AttendMask> mt = masked ? std::optional<AttendMask>{self_mask} : std::nullopt;
      // tgt [1, 2, 4] against a source of another length, [1, 3, 4].
      EXPECT_TRUE(passes_gradcheck([&](const Inputs& in) { return layer(in[0], in[1], ms, mt); },
                                   with_parameters({random_tensor({1, 2, 4}, 21), random_tensor({1, 3, 4}, 22)}, layer)));
    }
  }
}

TEST(TransformerLayers, DropoutIsActiveInTrainingAndIdentityInEval) {
  // Same construction seed: the same parameters whatever the rate (each Dropout takes one draw).
  Generator g1(23), g2(23);
  tf::TransformerEncoderLayer<double> dropping(kDModel, kDFF, kHeads, 0.5, 1e-5, g1);
  tf::TransformerEncoderLayer<double> plain(kDModel, kDFF, kHeads, 0.0, 1e-5, g2);
  ASSERT_EQ(dropping.state_dict(), plain.state_dict());
  const auto x = random_tensor({2, 3, 4}, 24);
  const auto reference = plain(x).value();
  EXPECT_GT(max_abs_diff(dropping(x).value(), reference), 1e-3);
  dropping.eval();
  EXPECT_EQ(dropping(x).value(), reference);
  EXPECT_EQ(dropping(x).value(), reference);
}

// ---- stacks and the whole Transformer ----

TEST(TransformerStacks, ParameterNamesIncludeLayerIndexAndPreLNFinalNorm) {
  Generator gen(25);
  tf::TransformerEncoder<double> encoder(7, 10, 0, kDModel, 2, kDFF, kHeads, 0.1, 1e-5, gen, /*norm_first=*/true);
  const Names names = names_of(encoder);
  ASSERT_EQ(names.size(), 1u + 2 * 13 + 2);
  EXPECT_EQ(names.front(), "embedding.embedding_layer.weight");
  EXPECT_EQ(names[1], "encoder_layers.0.multi_head_attention.W_k");
  EXPECT_EQ(names[14], "encoder_layers.1.multi_head_attention.W_k");
  EXPECT_EQ(names[names.size() - 2], "norm.weight");
  EXPECT_EQ(names.back(), "norm.bias");
  tf::TransformerDecoder<double> decoder(7, 10, 0, kDModel, 2, kDFF, kHeads, 0.1, 1e-5, gen);
  EXPECT_EQ(decoder.num_parameters(), 7 * kDModel + 2 * (2 * mha_count(kDModel) + ffn_count(kDModel, kDFF) + 6 * kDModel));
  EXPECT_EQ(names_of(decoder).back(), "decoder_layers.1.layer_norm_ffn.bias");  // post-LN: no final norm
}

TEST(TransformerStacks, EncoderIsEmbeddingThenPositionalEncodingThenLayers) {
  Generator gen(26);
  tf::TransformerEncoder<double> encoder(7, 10, 0, kDModel, 1, kDFF, kHeads, 0.0, 1e-5, gen);
  randomize(encoder, 27);
  const IndexArray tokens{{3, 1, 0}, {2, 6, 5}};
  const AttendMask mask = tf::make_src_mask(tokens, 0);
  // The same pieces as stand-alone modules holding the encoder's parameters.
  Generator other(28);
  tf::Embedding<double> embedding(7, kDModel, 0, other);
  nn::AddPositionalEncoding<double> pe(kDModel, 10);
  tf::TransformerEncoderLayer<double> layer(kDModel, kDFF, kHeads, 0.0, 1e-5, other);
  const auto state = encoder.state_dict();
  embedding.load_state_dict(sub_state(state, "embedding"));
  layer.load_state_dict(sub_state(state, "encoder_layers.0"));
  EXPECT_EQ(encoder(tokens, mask).value(), layer(pe(embedding(tokens)), mask).value());
  EXPECT_TRUE(throws_with<ShapeError>([&] { encoder(IndexArray{1, 2}); }, {"Embedding", "[batch, seq]", "[2]"}));
}

TEST(Transformer, ParameterNamesMatchTheSeedsAttributes) {
  Generator gen(27);
  tf::Transformer<double> model(5, 6, 10, 0, kDModel, 1, kDFF, kHeads, 0.1, 1e-5, gen);
  const Names expected{
      "encoder.embedding.embedding_layer.weight",
      "encoder.encoder_layers.0.multi_head_attention.W_k",
      "encoder.encoder_layers.0.multi_head_attention.W_q",
      "encoder.encoder_layers.0.multi_head_attention.W_v",
      "encoder.encoder_layers.0.multi_head_attention.linear.weight",
      "encoder.encoder_layers.0.multi_head_attention.linear.bias",
      "encoder.encoder_layers.0.layer_norm_self_attention.weight",
      "encoder.encoder_layers.0.layer_norm_self_attention.bias",
      "encoder.encoder_layers.0.ffn.linear1.weight",
      "encoder.encoder_layers.0.ffn.linear1.bias",
      "encoder.encoder_layers.0.ffn.linear2.weight",
      "encoder.encoder_layers.0.ffn.linear2.bias",
      "encoder.encoder_layers.0.layer_norm_ffn.weight",
      "encoder.encoder_layers.0.layer_norm_ffn.bias",
      "decoder.embedding.embedding_layer.weight",
      "decoder.decoder_layers.0.self_attention.W_k",
      "decoder.decoder_layers.0.self_attention.W_q",
      "decoder.decoder_layers.0.self_attention.W_v",
      "decoder.decoder_layers.0.self_attention.linear.weight",
      "decoder.decoder_layers.0.self_attention.linear.bias",
      "decoder.decoder_layers.0.layer_norm_self_attention.weight",
      "decoder.decoder_layers.0.layer_norm_self_attention.bias",
      "decoder.decoder_layers.0.src_tgt_attention.W_k",
      "decoder.decoder_layers.0.src_tgt_attention.W_q",
      "decoder.decoder_layers.0.src_tgt_attention.W_v",
      "decoder.decoder_layers.0.src_tgt_attention.linear.weight",
      "decoder.decoder_layers.0.src_tgt_attention.linear.bias",
      "decoder.decoder_layers.0.layer_norm_src_tgt_attention.weight",
      "decoder.decoder_layers.0.layer_norm_src_tgt_attention.bias",
      "decoder.decoder_layers.0.ffn.linear1.weight",
      "decoder.decoder_layers.0.ffn.linear1.bias",
      "decoder.decoder_layers.0.ffn.linear2.weight",
      "decoder.decoder_layers.0.ffn.linear2.bias",
      "decoder.decoder_layers.0.layer_norm_ffn.weight",
      "decoder.decoder_layers.0.layer_norm_ffn.bias",
      "generator.proj.weight",
      "generator.proj.bias",
  };
  EXPECT_EQ(names_of(model), expected);
  tf::Transformer<double> pre_ln(5, 6, 10, 0, kDModel, 1, kDFF, kHeads, 0.1, 1e-5, gen, /*norm_first=*/true);
  Names expected_pre = expected;
  expected_pre.insert(expected_pre.begin() + 14, {"encoder.norm.weight", "encoder.norm.bias"});
  expected_pre.insert(expected_pre.end() - 2, {"decoder.norm.weight", "decoder.norm.bias"});
  EXPECT_EQ(names_of(pre_ln), expected_pre);
}

TEST(Transformer, ParameterCountIsTheClosedForm) {
  const std::size_t src_vocab = 11, tgt_vocab = 13, d = 8, N = 3, ff = 16;
  for (bool norm_first : {false, true}) {
    Generator gen(28);
    tf::Transformer<float> model(src_vocab, tgt_vocab, 20, 0, d, N, ff, 2, 0.1, 1e-6, gen, norm_first);
    const std::size_t ln = 2 * d;
    const std::size_t encoder = src_vocab * d + N * (mha_count(d) + ffn_count(d, ff) + 2 * ln);
    const std::size_t decoder = tgt_vocab * d + N * (2 * mha_count(d) + ffn_count(d, ff) + 3 * ln);
    EXPECT_EQ(model.num_parameters(), encoder + decoder + d * tgt_vocab + tgt_vocab + (norm_first ? 2 * ln : 0));
  }
}

TEST(Transformer, MasksFromTokens) {
  const IndexArray src{{4, 2, 0}, {1, 0, 0}}, tgt{{1, 3, 0}};
  EXPECT_EQ(tf::make_src_mask(src, 0).may_attend(), (Mask{{{1, 1, 0}}, {{1, 0, 0}}}));
  EXPECT_EQ(tf::make_tgt_mask(tgt, 0).may_attend(), (Mask{{{1, 0, 0}, {1, 1, 0}, {1, 1, 0}}}));
  EXPECT_TRUE(throws_with<ShapeError>([] { tf::make_tgt_mask(IndexArray{1, 2}, 0); }, {"make_tgt_mask", "[2]"}));
}

TEST(Transformer, GeneratorGivesLogProbabilitiesOverTheTargetVocabulary) {
  Generator gen(29);
  tf::Transformer<double> model(5, 6, 10, 0, kDModel, 1, kDFF, kHeads, 0.0, 1e-5, gen);
  const IndexArray src{{1, 2, 3}, {4, 2, 0}}, tgt{{1, 5}, {2, 0}};
  const auto out = model(src, tgt, tf::make_src_mask(src, 0), tf::make_tgt_mask(tgt, 0));
  ASSERT_EQ(out.shape(), (Shape{2, 2, kDModel}));
  const auto logp = model.generator(out);
  ASSERT_EQ(logp.shape(), (Shape{2, 2, 6}));
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 0; s < 2; ++s) {
      double total = 0.0;
      for (std::size_t v = 0; v < 6; ++v) total += std::exp(logp.value()(b, s, v));
      EXPECT_NEAR(total, 1.0, 1e-12);
    }
}

// The whole model: src and tgt tokens (no pad, so the pad row is unused and its zero analytic
// gradient is also the numeric one), a source mask hiding one key and the causal target mask.
void gradcheck_whole_model(bool norm_first) {
  Generator gen(30);
  tf::Transformer<double> model(5, 5, 10, 0, kDModel, 1, kDFF, kHeads, 0.1, 1e-5, gen, norm_first);
  randomize(model, 31);
  model.eval();
  const IndexArray src{{1, 3, 4}}, tgt{{2, 4, 1}};
  const AttendMask src_mask(Mask{{{1, 1, 0}}});
  const AttendMask tgt_mask = tf::make_tgt_mask(tgt, 0);
  // Every parameter (461 values, 477 with the pre-LN final norms): 15 backwards and ~950 forwards of a
  // tiny model, a few seconds at most.
  EXPECT_TRUE(passes_gradcheck([&](const Inputs&) { return model.generator(model(src, tgt, src_mask, tgt_mask)); },
                               model.parameters()));
}

TEST(Transformer, GradcheckEveryParameterPostLN) { gradcheck_whole_model(false); }
TEST(Transformer, GradcheckEveryParameterPreLN) { gradcheck_whole_model(true); }

TEST(Transformer, PadEmbeddingRowGetsNoGradientThroughTheWholeModel) {
  Generator gen(32);
  tf::Transformer<double> model(5, 5, 10, 0, kDModel, 1, kDFF, kHeads, 0.1, 1e-5, gen);
  const IndexArray src{{1, 3, 0}, {2, 0, 0}}, tgt{{1, 4, 0}, {3, 0, 0}};
  {
    GradientTape tape;
    const auto logp = model.generator(model(src, tgt, tf::make_src_mask(src, 0), tf::make_tgt_mask(tgt, 0)));
    tape.backward(sum(logp * random_tensor({2, 3, 5}, 33, false)));
  }
  for (const auto* emb : {&model.encoder().embedding(), &model.decoder().embedding()}) {
    const auto& g = emb->embedding_layer().weight().grad();
    EXPECT_EQ(xt::amax(xt::abs(xt::view(g, 0, xt::all())))(), 0.0);
    EXPECT_GT(xt::amax(xt::abs(xt::view(g, 1, xt::all())))(), 0.0);
    EXPECT_EQ(xt::amax(xt::abs(xt::view(emb->embedding_layer().weight().value(), 0, xt::all())))(), 0.0);
  }
}

TEST(Transformer, CausalMaskKeepsEarlierOutputsIndependentOfLaterTargets) {
  for (bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-LN" : "post-LN");
    Generator gen(34);
    tf::Transformer<double> model(6, 6, 10, 0, kDModel, 2, kDFF, kHeads, 0.1, 1e-5, gen, norm_first);
    model.eval();
    const IndexArray src{{1, 2, 3, 4}}, tgt{{1, 5, 2, 3}}, changed{{1, 5, 2, 4}};
    const auto run = [&](const IndexArray& t, bool causal) {
      std::optional<AttendMask> mask;
      if (causal) mask = tf::make_tgt_mask(t, 0);
      return model(src, t, tf::make_src_mask(src, 0), mask).value();
    };
    const auto a = run(tgt, true), b = run(changed, true);
    EXPECT_EQ(xt::xarray<double>(xt::view(a, 0, xt::range(0, 3), xt::all())),
              xt::xarray<double>(xt::view(b, 0, xt::range(0, 3), xt::all())));
    EXPECT_GT(max_abs_diff(xt::view(a, 0, 3, xt::all()), xt::view(b, 0, 3, xt::all())), 1e-6);
    // Without the mask the change leaks backwards: the test above can fail.
    EXPECT_GT(max_abs_diff(xt::view(run(tgt, false), 0, 0, xt::all()), xt::view(run(changed, false), 0, 0, xt::all())),
              1e-6);
  }
}

TEST(Transformer, DropoutActiveInTrainingIdentityInEval) {
  Generator g1(35), g2(35);
  tf::Transformer<double> dropping(5, 5, 10, 0, kDModel, 1, kDFF, kHeads, 0.5, 1e-5, g1);
  tf::Transformer<double> plain(5, 5, 10, 0, kDModel, 1, kDFF, kHeads, 0.0, 1e-5, g2);
  ASSERT_EQ(dropping.state_dict(), plain.state_dict());
  const IndexArray src{{1, 2, 3}}, tgt{{4, 1, 2}};
  const auto reference = plain(src, tgt).value();
  const auto first = dropping(src, tgt).value();
  EXPECT_GT(max_abs_diff(first, reference), 1e-3);
  EXPECT_GT(max_abs_diff(dropping(src, tgt).value(), first), 1e-3);  // a new mask each call
  dropping.eval();
  EXPECT_EQ(dropping(src, tgt).value(), reference);
}

TEST(Transformer, OptionsStructBuildsTheModelThePositionalArgumentsBuild) {
  // Every field distinct, so a field read in the wrong place changes a shape or a number.
  Generator g1(36), g2(36);
  tf::Transformer<double> positional(5, 7, 9, 1, kDModel, 2, kDFF, kHeads, 0.25, 1e-3, g1, true);
  tf::Transformer<double> named({.src_vocab_size = 5, .tgt_vocab_size = 7, .max_len = 9, .pad_idx = 1, .N = 2,
                                 .layer = {.d_model = kDModel, .d_ff = kDFF, .heads_num = kHeads, .dropout_rate = 0.25,
                                           .layer_norm_eps = 1e-3, .norm_first = true}},
                                g2);
  ASSERT_EQ(names_of(named), names_of(positional));
  ASSERT_EQ(named.state_dict(), positional.state_dict());
  const IndexArray src{{2, 3, 4}}, tgt{{5, 2, 6}};
  EXPECT_EQ(named(src, tgt).value(), positional(src, tgt).value());  // same dropout, eps and pre-LN
  EXPECT_EQ(named.encoder().embedding().embedding_layer().padding_idx(), 1);
}

TEST(Transformer, OptionsDefaultToPyTorchsTransformer) {
  const tf::TransformerOptions options;
  EXPECT_EQ(options.N, 6u);
  EXPECT_EQ(options.layer.d_model, 512u);
  EXPECT_EQ(options.layer.d_ff, 2048u);
  EXPECT_EQ(options.layer.heads_num, 8u);
  EXPECT_EQ(options.layer.dropout_rate, 0.1);
  EXPECT_EQ(options.layer.layer_norm_eps, 1e-5);
  EXPECT_FALSE(options.layer.norm_first);
  Generator gen(37);  // a vocabulary size left out is refused, not a model with no tokens
  EXPECT_TRUE(throws_with<ValueError>([&] { tf::Transformer<float>({.tgt_vocab_size = 4, .layer = {}}, gen); }, {"0"}));
}

}  // namespace
}  // namespace tapegrad
