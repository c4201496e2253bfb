// labml.ai's sequence-first PrepareForMultiHeadAttention and MultiHeadAttention:
// forward against a naive loop reference over the module's own parameter values, gradchecks over
// the inputs and every parameter (with and without masks), dL/dattn, names and counts, dropout,
// errors, and the batch-first review's six bugs where they apply to this layout.
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "nn/labml/multi_head_attention.h"
#include "tests/support/nn_support.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using nn::labml::MultiHeadAttention;
using nn::labml::PrepareForMultiHeadAttention;
using testing::mask_from;
using testing::naive_linear;
using testing::names_of;
using testing::parameter;
using testing::with_parameters;
using Array = xt::xarray<double>;

constexpr std::size_t kHeads = 2, kDModel = 6, kDk = 3;




struct Reference {
  Array scores;  // [seq_q, seq_k, batch, heads], unscaled q.k
  Array attn;    // [seq_q, seq_k, batch, heads], post-softmax, pre-dropout
  Array v;       // value projection [seq_k, batch, d_model]; head h, dim d at column h * d_k + d
  Array out;     // [seq_q, batch, d_model]
};

struct ReferenceOptions {
  std::optional<double> scale;  // default 1/sqrt(d_k)
  const Array* drop = nullptr;  // dropout multiplier on attn (0 or 1/(1-p)), [seq_q, seq_k, batch, heads]
};

// mask[i, j, b] with a size-1 axis 0 (queries) or 2 (batch) broadcast; no mask allows every key.
bool allowed_at(const std::optional<AttendMask>& mask, std::size_t i, std::size_t j, std::size_t b) {
  if (!mask) return true;
  const Mask& m = mask->may_attend();
  return m(m.shape()[0] == 1 ? 0 : i, j, m.shape()[2] == 1 ? 0 : b);
}

// labml.ai's forward written with plain loops over the module's own parameter values.
Reference naive_attention(const MultiHeadAttention<double>& m, const Array& query, const Array& key, const Array& value,
                          const std::optional<AttendMask>& mask, const ReferenceOptions& options = {}) {
  const auto state = m.state_dict();
  const std::size_t heads = m.heads(), d_k = m.d_k();
  const std::size_t seq_q = query.shape()[0], seq_k = key.shape()[0], batch = query.shape()[1];
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(d_k)));
  const Array q = naive_linear(query, state, "query.linear."), k = naive_linear(key, state, "key.linear.");
  Reference r{xt::zeros<double>({seq_q, seq_k, batch, heads}), xt::zeros<double>({seq_q, seq_k, batch, heads}),
              naive_linear(value, state, "value.linear."), {}};
  Array ctx = xt::zeros<double>({seq_q, batch, heads * d_k});
  for (std::size_t i = 0; i < seq_q; ++i)
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t h = 0; h < heads; ++h) {
        std::vector<double> s(seq_k);
        std::vector<bool> allowed(seq_k, true);
        double top = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < seq_k; ++j) {
          for (std::size_t d = 0; d < d_k; ++d) r.scores(i, j, b, h) += q(i, b, h * d_k + d) * k(j, b, h * d_k + d);
          s[j] = r.scores(i, j, b, h) * scale;
          allowed[j] = allowed_at(mask, i, j, b);
          if (allowed[j]) top = std::max(top, s[j]);
        }
        double total = 0.0;
        for (std::size_t j = 0; j < seq_k; ++j) total += allowed[j] ? std::exp(s[j] - top) : 0.0;
        for (std::size_t j = 0; j < seq_k; ++j) {
          // A fully masked row stays all zero (tapegrad's documented softmax of an all -inf row).
          r.attn(i, j, b, h) = allowed[j] ? std::exp(s[j] - top) / total : 0.0;
          const double a = r.attn(i, j, b, h) * (options.drop ? (*options.drop)(i, j, b, h) : 1.0);
          for (std::size_t d = 0; d < d_k; ++d) ctx(i, b, h * d_k + d) += a * r.v(j, b, h * d_k + d);
        }
      }
  r.out = naive_linear(ctx, state, "output.");
  return r;
}


// A mask case: shapes of query/key and the mask (empty: no mask), with the mask's values.
struct Case {
  std::string label;
  std::size_t seq_q, seq_k, batch;
  std::optional<AttendMask> mask;
};

AttendMask random_mask(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  Mask m = Mask::from_shape(shape);
  for (auto& v : m) v = gen.randint(0, 3) != 0;  // about two thirds may attend
  m.data()[0] = true;                            // keep the first query of the first batch from being empty
  return AttendMask(std::move(m));
}


std::vector<Case> cases() {
  AttendMask full = random_mask({2, 3, 2}, 7);
  AttendMask over_queries = random_mask({1, 3, 2}, 8);
  AttendMask over_batch = random_mask({2, 3, 1}, 9);
  AttendMask causal = mask_from({3, 3, 1}, {1, 0, 0, 1, 1, 0, 1, 1, 1});
  // Query 1 of batch 0 may attend to nothing: its attention row is all zero.
  AttendMask empty_row = mask_from({2, 3, 2}, {1, 1, 1, 0, 0, 1, /* query 1: */ 0, 1, 0, 1, 0, 1});
  return {{"self, no mask", 3, 3, 2, std::nullopt},
          {"cross (seq_q 2, seq_k 3), no mask", 2, 3, 2, std::nullopt},
          {"cross, mask [seq_q, seq_k, batch]", 2, 3, 2, full},
          {"cross, mask [1, seq_k, batch] broadcast over queries", 2, 3, 2, over_queries},
          {"cross, mask [seq_q, seq_k, 1] broadcast over batch", 2, 3, 2, over_batch},
          {"self, causal mask [3, 3, 1]", 3, 3, 2, causal},
          {"cross, a fully masked query row", 2, 3, 2, empty_row}};
}

struct Data {
  Tensor<double> query, key, value;
};

Data random_data(const Case& c, std::uint64_t seed) {
  return {random_tensor({c.seq_q, c.batch, kDModel}, seed), random_tensor({c.seq_k, c.batch, kDModel}, seed + 1),
          random_tensor({c.seq_k, c.batch, kDModel}, seed + 2)};
}

// ---------------------------------------------------------------------------------------------
// PrepareForMultiHeadAttention

TEST(PrepareForMultiHeadAttention, SeedShapeExample) {
  Generator gen(0);
  PrepareForMultiHeadAttention<float> prep(512, 8, 64, gen, /*bias=*/true);
  const auto x = Tensor<float>::randn({10, 32, 512}, gen);
  EXPECT_EQ(prep(x).shape(), (Shape{10, 32, 8, 64}));
  EXPECT_EQ(prep(Tensor<float>::randn({32, 512}, gen)).shape(), (Shape{32, 8, 64}));
}

TEST(PrepareForMultiHeadAttention, SplitsTheProjectionIntoHeads) {
  Generator gen(1);
  PrepareForMultiHeadAttention<double> prep(4, 2, 3, gen, true);
  const auto x = random_tensor({2, 1, 4}, 2);
  const auto y = prep(x);
  ASSERT_EQ(y.shape(), (Shape{2, 1, 2, 3}));
  const Array w = parameter(prep, "linear.weight").value(), bias = parameter(prep, "linear.bias").value();
  for (std::size_t s = 0; s < 2; ++s)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t d = 0; d < 3; ++d) {
        double expected = bias(h * 3 + d);
        for (std::size_t m = 0; m < 4; ++m) expected += x.value()(s, 0, m) * w(h * 3 + d, m);
        EXPECT_NEAR(y.value()(s, 0, h, d), expected, 1e-12);
      }
}

TEST(PrepareForMultiHeadAttention, NamesGradcheckAndErrors) {
  Generator gen(2);
  PrepareForMultiHeadAttention<double> prep(4, 2, 3, gen, true);
  EXPECT_EQ(names_of(prep), (std::vector<std::string>{"linear.weight", "linear.bias"}));
  EXPECT_EQ(prep.num_parameters(), 4u * 6 + 6);
  EXPECT_EQ(names_of(PrepareForMultiHeadAttention<double>(4, 2, 3, gen, false)),
            (std::vector<std::string>{"linear.weight"}));
  EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return prep(x[0]); },
                               with_parameters({random_tensor({2, 4}, 3)}, prep)));
  EXPECT_TRUE(throws_with<ShapeError>([&] { prep(random_tensor({2, 5}, 1)); },
                                      {"PrepareForMultiHeadAttention", "[2,5]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { PrepareForMultiHeadAttention<double>(4, 0, 3, gen, true); },
                                      {"PrepareForMultiHeadAttention", "heads=0"}));
}

// ---------------------------------------------------------------------------------------------
// MultiHeadAttention: structure

TEST(LabmlMultiHeadAttention, ParameterNamesFollowTheSeed) {
  Generator gen(0);
  MultiHeadAttention<double> mha(kHeads, kDModel, gen);
  EXPECT_EQ(names_of(mha), (std::vector<std::string>{"query.linear.weight", "query.linear.bias", "key.linear.weight",
                                                     "key.linear.bias", "value.linear.weight", "value.linear.bias",
                                                     "output.weight", "output.bias"}));
  // bias = false drops the query and key biases only: value always has one, as in labml's code.
  MultiHeadAttention<double> no_bias(kHeads, kDModel, gen, 0.1, /*bias=*/false);
  EXPECT_EQ(names_of(no_bias), (std::vector<std::string>{"query.linear.weight", "key.linear.weight",
                                                         "value.linear.weight", "value.linear.bias", "output.weight",
                                                         "output.bias"}));
  std::vector<std::string> generators;
  for (const auto& [name, g] : mha.named_generators()) generators.push_back(name);
  EXPECT_EQ(generators, (std::vector<std::string>{"dropout.stream"}));
}

TEST(LabmlMultiHeadAttention, ParameterCountsAreTheClosedForm) {
  Generator gen(0);
  for (std::size_t d : {4u, 6u, 8u}) {
    SCOPED_TRACE("d_model " + std::to_string(d));
    EXPECT_EQ(MultiHeadAttention<double>(2, d, gen).num_parameters(), 4 * (d * d + d));
    EXPECT_EQ(MultiHeadAttention<double>(2, d, gen, 0.1, false).num_parameters(), 4 * d * d + 2 * d);
  }
  EXPECT_EQ(MultiHeadAttention<float>(8, 512, gen).num_parameters(), 4u * (512 * 512 + 512));
}

TEST(LabmlMultiHeadAttention, GetScoreIsTheSeedEinsum) {
  // labml.ai's example: query (2, 1, 2, 4), key (3, 1, 2, 4) -> (2, 3, 1, 2).
  Generator gen(0);
  MultiHeadAttention<double> mha(2, 8, gen);
  const auto q = random_tensor({2, 1, 2, 4}, 1), k = random_tensor({3, 1, 2, 4}, 2);
  const auto s = mha.get_score(q, k);
  ASSERT_EQ(s.shape(), (Shape{2, 3, 1, 2}));
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t h = 0; h < 2; ++h) {
        double expected = 0.0;
        for (std::size_t d = 0; d < 4; ++d) expected += q.value()(i, 0, h, d) * k.value()(j, 0, h, d);
        EXPECT_NEAR(s.value()(i, j, 0, h), expected, 1e-12);
      }
}

TEST(LabmlMultiHeadAttention, PrepareMaskAddsAHeadAxis) {
  Generator gen(0);
  MultiHeadAttention<double> mha(kHeads, kDModel, gen);
  const AttendMask m = random_mask({1, 3, 2}, 1);
  const Mask prepared = mha.prepare_mask(m, {4, 2, kDModel}, {3, 2, kDModel}).may_attend();
  ASSERT_EQ(Shape(prepared.shape().begin(), prepared.shape().end()), (Shape{1, 3, 2, 1}));
  for (std::size_t j = 0; j < 3; ++j)
    for (std::size_t b = 0; b < 2; ++b) EXPECT_EQ(prepared(0, j, b, 0), m.may_attend()(0, j, b));
}

// ---------------------------------------------------------------------------------------------
// MultiHeadAttention: values and gradients

TEST(LabmlMultiHeadAttention, ForwardMatchesTheNaiveReference) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    Generator gen(10);
    MultiHeadAttention<double> mha(kHeads, kDModel, gen);
    mha.eval();
    const Data x = random_data(c, 20);
    const auto out = mha(x.query, x.key, x.value, c.mask);
    const Reference r = naive_attention(mha, x.query.value(), x.key.value(), x.value.value(), c.mask);
    ASSERT_EQ(out.shape(), (Shape{c.seq_q, c.batch, kDModel}));
    ASSERT_EQ(mha.attention().shape(), (Shape{c.seq_q, c.seq_k, c.batch, kHeads}));
    EXPECT_LT(max_abs_diff(out.value(), r.out), 1e-12);
    EXPECT_LT(max_abs_diff(mha.attention().value(), r.attn), 1e-12);
  }
}

TEST(LabmlMultiHeadAttention, ForwardWithoutQueryKeyBiasMatchesTheReference) {
  Generator gen(11);
  MultiHeadAttention<double> mha(kHeads, kDModel, gen, 0.1, /*bias=*/false);
  mha.eval();
  const Case c = cases()[2];
  const Data x = random_data(c, 21);
  const Reference r = naive_attention(mha, x.query.value(), x.key.value(), x.value.value(), c.mask);
  EXPECT_LT(max_abs_diff(mha(x.query, x.key, x.value, c.mask).value(), r.out), 1e-12);
}

TEST(LabmlMultiHeadAttention, GradcheckInputsAndEveryParameter) {
  for (const Case& c : cases()) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(c.label + (bias ? ", bias" : ", no query/key bias"));
      Generator gen(12);
      MultiHeadAttention<double> mha(kHeads, kDModel, gen, 0.1, bias);
      mha.eval();  // gradcheck runs the forward many times: no dropout
      const Data x = random_data(c, 22);
      EXPECT_TRUE(passes_gradcheck([&](const Inputs& in) { return mha(in[0], in[1], in[2], c.mask); },
                                   with_parameters({x.query, x.key, x.value}, mha)));
    }
  }
}

TEST(LabmlMultiHeadAttention, AttentionRowsSumToOneAndMaskedKeysGetExactlyZero) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    Generator gen(13);
    MultiHeadAttention<double> mha(kHeads, kDModel, gen);
    mha.eval();
    const Data x = random_data(c, 23);
    const auto out = mha(x.query, x.key, x.value, c.mask);
    const Array& a = mha.attention().value();
    for (std::size_t i = 0; i < c.seq_q; ++i)
      for (std::size_t b = 0; b < c.batch; ++b) {
        bool any_allowed = false;
        for (std::size_t h = 0; h < kHeads; ++h) {
          double row = 0.0;
          for (std::size_t j = 0; j < c.seq_k; ++j) {
            const bool allowed = allowed_at(c.mask, i, j, b);
            any_allowed = any_allowed || allowed;
            if (!allowed) {
              EXPECT_EQ(a(i, j, b, h), 0.0);
            }
            row += a(i, j, b, h);
          }
          EXPECT_NEAR(row, any_allowed ? 1.0 : 0.0, 1e-12);
        }
        // A query with no key to attend to outputs exactly output.bias (documented in the header).
        if (!any_allowed) {
          for (std::size_t o = 0; o < kDModel; ++o) EXPECT_EQ(out.value()(i, b, o), mha.output().bias().value()(o));
        }
      }
  }
}

TEST(LabmlMultiHeadAttention, AttentionGradIsDLossDAttention) {
  for (const Case& c : {cases()[1], cases()[2], cases()[6]}) {
    SCOPED_TRACE(c.label);
    Generator gen(14);
    MultiHeadAttention<double> mha(kHeads, kDModel, gen);
    mha.eval();
    const Data x = random_data(c, 24);
    const auto weights = random_tensor({c.seq_q, c.batch, kDModel}, 25, false);
    {
      GradientTape tape;
      tape.backward(sum(mha(x.query, x.key, x.value, c.mask) * weights));
    }
    ASSERT_TRUE(mha.attention().has_grad());
    // L = sum(R * output(ctx)), ctx[i, b, h*d_k + d] = sum_j A[i, j, b, h] v[j, b, h*d_k + d], so
    // dL/dA[i, j, b, h] = sum_d (sum_o R[i, b, o] W_out[o, h*d_k + d]) v[j, b, h*d_k + d].
    const Reference r = naive_attention(mha, x.query.value(), x.key.value(), x.value.value(), c.mask);
    const Array& w_out = mha.output().weight().value();
    Array expected = xt::zeros<double>({c.seq_q, c.seq_k, c.batch, kHeads});
    for (std::size_t i = 0; i < c.seq_q; ++i)
      for (std::size_t j = 0; j < c.seq_k; ++j)
        for (std::size_t b = 0; b < c.batch; ++b)
          for (std::size_t h = 0; h < kHeads; ++h)
            for (std::size_t d = 0; d < kDk; ++d) {
              double d_ctx = 0.0;
              for (std::size_t o = 0; o < kDModel; ++o) d_ctx += weights.value()(i, b, o) * w_out(o, h * kDk + d);
              expected(i, j, b, h) += d_ctx * r.v(j, b, h * kDk + d);
            }
    EXPECT_LT(max_abs_diff(mha.attention().grad(), expected), 1e-12);
  }
}

TEST(LabmlMultiHeadAttention, NoTapeNoRetainedGradient) {
  Generator gen(15);
  MultiHeadAttention<double> mha(kHeads, kDModel, gen);
  const Data x = random_data(cases()[0], 26);
  mha(x.query, x.key, x.value);
  EXPECT_FALSE(mha.attention().requires_grad());
  EXPECT_FALSE(mha.attention().has_grad());
}

TEST(LabmlMultiHeadAttention, DropoutIsActiveInTrainingAndIdentityInEval) {
  Generator gen(16);
  MultiHeadAttention<double> mha(kHeads, kDModel, gen, 0.5);
  const Case c = cases()[2];
  const Data x = random_data(c, 27);
  const auto train1 = mha(x.query, x.key, x.value, c.mask).value();
  const auto train2 = mha(x.query, x.key, x.value, c.mask).value();
  EXPECT_GT(max_abs_diff(train1, train2), 1e-6);  // the dropout stream moves on
  mha.eval();
  const auto eval1 = mha(x.query, x.key, x.value, c.mask).value();
  EXPECT_EQ(eval1, mha(x.query, x.key, x.value, c.mask).value());
  EXPECT_LT(max_abs_diff(eval1, naive_attention(mha, x.query.value(), x.key.value(), x.value.value(), c.mask).out),
            1e-12);
  EXPECT_GT(max_abs_diff(train1, eval1), 1e-6);
}

// ---------------------------------------------------------------------------------------------
// The batch-first review's six bugs, each of which one of these tests would catch in this module.

class LabmlReviewedBugs : public ::testing::Test {
 protected:
  // seq_q 4 and seq_k 5 differ from d_k 3, so a 1/sqrt(seq) scale cannot pass for 1/sqrt(d_k).
  Case c{"cross, mask", 4, 5, 2, random_mask({4, 5, 2}, 30)};
  Generator gen{31};
  MultiHeadAttention<double> mha{kHeads, kDModel, gen};
  Data x = random_data(c, 32);

  void SetUp() override { mha.eval(); }
  Array run() { return mha(x.query, x.key, x.value, c.mask).value(); }
  Reference reference(const ReferenceOptions& options = {}) {
    return naive_attention(mha, x.query.value(), x.key.value(), x.value.value(), c.mask, options);
  }
};

TEST_F(LabmlReviewedBugs, A_QueryKeyValueProjectionsAreApplied) {
  for (const std::string name : {"query.linear.weight", "key.linear.weight", "value.linear.weight"}) {
    SCOPED_TRACE(name);
    const Array before = run();
    EXPECT_LT(max_abs_diff(before, reference().out), 1e-12);
    parameter(mha, name).mutable_value() *= 1.7;
    const Array after = run();
    EXPECT_GT(max_abs_diff(before, after), 1e-4);
    EXPECT_LT(max_abs_diff(after, reference().out), 1e-12);
  }
}

TEST_F(LabmlReviewedBugs, B_ScaleIsOneOverSqrtDkNotSqrtSeqLen) {
  run();
  EXPECT_DOUBLE_EQ(mha.scale(), 1.0 / std::sqrt(3.0));
  EXPECT_LT(max_abs_diff(mha.attention().value(), reference().attn), 1e-12);
  for (double wrong : {1.0 / std::sqrt(4.0), 1.0 / std::sqrt(5.0), 1.0}) {
    EXPECT_GT(max_abs_diff(mha.attention().value(), reference({.scale = wrong}).attn), 1e-4);
  }
}

TEST_F(LabmlReviewedBugs, C_MaskedKeysGetExactlyZeroWeightNotAMultipliedScore) {
  run();
  const Array& a = mha.attention().value();
  std::size_t masked = 0;
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 5; ++j)
      for (std::size_t b = 0; b < 2; ++b)
        if (!c.mask->may_attend()(i, j, b)) {
          for (std::size_t h = 0; h < kHeads; ++h, ++masked) EXPECT_EQ(a(i, j, b, h), 0.0);
        }
  EXPECT_GT(masked, 0u);
}

TEST_F(LabmlReviewedBugs, D_OutputProjectionIsApplied) {
  const Array before = run();
  parameter(mha, "output.weight").mutable_value() *= -0.5;
  const Array after = run();
  EXPECT_GT(max_abs_diff(before, after), 1e-4);
  EXPECT_LT(max_abs_diff(after, reference().out), 1e-12);
}

TEST_F(LabmlReviewedBugs, E_AttentionDropoutIsAppliedInTraining) {
  // Replays the dropout stream: one float uniform draw per attention element, row-major; an element is
  // kept when u >= p and then scaled by 1/(1-p) (the dropout op's documented contract).
  Generator gen2(33);
  MultiHeadAttention<double> train(kHeads, kDModel, gen2, 0.4);
  Generator replay = *train.named_generators().at(0).second;  // the stream's state before the forward
  const Array out = train(x.query, x.key, x.value, c.mask).value();
  Array drop = xt::zeros<double>(Shape{4, 5, 2, kHeads});
  std::vector<float> u(drop.size());
  replay.fill_uniform(u.data(), u.size());
  for (std::size_t e = 0; e < u.size(); ++e) drop.data()[e] = u[e] >= 0.4 ? 1.0 / 0.6 : 0.0;
  const Reference plain = naive_attention(train, x.query.value(), x.key.value(), x.value.value(), c.mask);
  const ReferenceOptions with_dropout{.scale = std::nullopt, .drop = &drop};
  const Reference dropped =
      naive_attention(train, x.query.value(), x.key.value(), x.value.value(), c.mask, with_dropout);
  std::size_t zeroed = 0;  // weights that softmax made positive and dropout zeroed
  for (std::size_t e = 0; e < u.size(); ++e) zeroed += drop.data()[e] == 0.0 && plain.attn.data()[e] > 0.0;
  EXPECT_GT(zeroed, 0u);
  EXPECT_LT(max_abs_diff(out, dropped.out), 1e-12);
  // attention() is the map before dropout: still a distribution over the keys.
  EXPECT_LT(max_abs_diff(train.attention().value(), plain.attn), 1e-12);
  train.eval();
  EXPECT_GT(max_abs_diff(out, train(x.query, x.key, x.value, c.mask).value()), 1e-6);
}

TEST_F(LabmlReviewedBugs, F_SoftmaxIsOverTheKeyAxisOnly) {
  run();
  const Array& a = mha.attention().value();
  // Each [i, :, b, h] row sums to 1 (the mask leaves every row of this case at least one key);
  // a softmax over the (query, key) plane would make each plane, not each row, sum to 1.
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < kHeads; ++h) {
        double row = 0.0;
        for (std::size_t j = 0; j < 5; ++j) row += a(i, j, b, h);
        EXPECT_NEAR(row, 1.0, 1e-12);
      }
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(LabmlMultiHeadAttention, DModelMustBeAMultipleOfHeads) {
  Generator gen(0);
  EXPECT_TRUE(throws_with<ValueError>([&] { MultiHeadAttention<double>(4, 6, gen); },
                                      {"MultiHeadAttention", "d_model (6)", "heads (4)"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { MultiHeadAttention<double>(0, 6, gen); },
                                      {"MultiHeadAttention", "heads (0)"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { MultiHeadAttention<double>(2, 6, gen, 1.5); }, {"Dropout", "[0, 1]"}));
}

TEST(LabmlMultiHeadAttention, BadInputShapesNameTheArgument) {
  Generator gen(0);
  MultiHeadAttention<double> mha(kHeads, kDModel, gen);
  const auto q = random_tensor({2, 3, 6}, 1), kv = random_tensor({4, 3, 6}, 2);
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(random_tensor({2, 3, 5}, 1), kv, kv); },
                                      {"MultiHeadAttention(heads=2, d_model=6)", "query", "[2,3,5]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(q, random_tensor({4, 6}, 1), kv); }, {"key", "[4,6]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(q, kv, random_tensor({5, 3, 6}, 1)); },
                                      {"key [4,3,6]", "value [5,3,6]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(q, random_tensor({4, 2, 6}, 1), random_tensor({4, 2, 6}, 2)); },
                                      {"key [4,2,6]", "query [2,3,6]"}));
}

TEST(LabmlMultiHeadAttention, EachMaskAssertIsAShapeErrorNamingTheShapes) {
  Generator gen(0);
  MultiHeadAttention<double> mha(kHeads, kDModel, gen);
  const auto q = random_tensor({2, 3, 6}, 1), kv = random_tensor({4, 3, 6}, 2);
  const auto call = [&](const Shape& shape) { return [&, shape] { mha(q, kv, kv, AttendMask(Mask::from_shape(shape))); }; };
  EXPECT_TRUE(throws_with<ShapeError>(call({2, 4}),
                                      {"prepare_mask", "mask [2,4]", "3 axes", "query [2,3,6]", "key [4,3,6]"}));
  EXPECT_TRUE(throws_with<ShapeError>(call({3, 4, 3}),
                                      {"prepare_mask", "mask [3,4,3]", "axis 0", "seq_q = 2", "query [2,3,6]"}));
  EXPECT_TRUE(throws_with<ShapeError>(call({2, 3, 3}),
                                      {"prepare_mask", "mask [2,3,3]", "axis 1", "seq_k = 4", "key [4,3,6]"}));
  EXPECT_TRUE(throws_with<ShapeError>(call({1, 4, 2}),
                                      {"prepare_mask", "mask [1,4,2]", "axis 2", "batch_size = 3", "query [2,3,6]"}));
}

}  // namespace
}  // namespace tapegrad
