// Batch-first ScaledDotProductAttention and MultiHeadAttention (the batch-first reference and its review): forward against a
// naive loop reference over the module's own parameter values, gradchecks over the inputs and
// every parameter (with and without masks), dL/dweights, names and counts, dropout, errors, and a
// test for each of the six bugs the batch-first review finds in a batch-first MultiHeadAttention.
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "nn/masks.h"
#include "nn/mha/multi_head_attention.h"
#include "tests/support/nn_support.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using nn::mha::MultiHeadAttention;
using nn::mha::ScaledDotProductAttention;
using testing::mask_from;
using testing::naive_linear;
using testing::names_of;
using testing::parameter;
using testing::with_parameters;
using Array = xt::xarray<double>;

constexpr std::size_t kHeads = 2, kDModel = 6, kDk = 3;





AttendMask random_mask(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  Mask m = Mask::from_shape(shape);
  for (auto& v : m) v = gen.randint(0, 3) != 0;  // about two thirds may attend
  return AttendMask(std::move(m));
}

// mask[index] with the mask broadcast from the right to index's rank (size-1 axes stretch).
bool allowed_at(const std::optional<AttendMask>& mask, const std::vector<std::size_t>& index) {
  if (!mask) return true;
  const Mask& m = mask->may_attend();
  const std::size_t lead = index.size() - m.dimension();
  std::size_t flat = 0;
  for (std::size_t a = 0; a < m.dimension(); ++a) {
    flat = flat * m.shape()[a] + (m.shape()[a] == 1 ? 0 : index[lead + a]);
  }
  return m.data()[flat];
}

// Softmax of the allowed entries of s; masked entries (and a fully masked row) give 0.
std::vector<double> masked_softmax(const std::vector<double>& s, const std::vector<bool>& allowed) {
  double top = -std::numeric_limits<double>::infinity(), total = 0.0;
  for (std::size_t j = 0; j < s.size(); ++j)
    if (allowed[j]) top = std::max(top, s[j]);
  for (std::size_t j = 0; j < s.size(); ++j) total += allowed[j] ? std::exp(s[j] - top) : 0.0;
  std::vector<double> p(s.size());
  for (std::size_t j = 0; j < s.size(); ++j) p[j] = allowed[j] ? std::exp(s[j] - top) / total : 0.0;
  return p;
}

// ---------------------------------------------------------------------------------------------
// ScaledDotProductAttention

struct SdpaReference {
  Array weights;  // [batch, seq_q, seq_k]
  Array output;   // [batch, seq_q, d_v]
};

// q [batch or 1, seq_q, d_k], k [batch or 1, seq_k, d_k], v [batch or 1, seq_k, d_v] in loops.
SdpaReference naive_sdpa(const Array& q, const Array& k, const Array& v, const std::optional<AttendMask>& mask) {
  const std::size_t batch = std::max({q.shape()[0], k.shape()[0], v.shape()[0]});
  const std::size_t seq_q = q.shape()[1], seq_k = k.shape()[1], d_k = q.shape()[2], d_v = v.shape()[2];
  const auto at = [](const Array& a, std::size_t b) { return a.shape()[0] == 1 ? 0 : b; };
  SdpaReference r{xt::zeros<double>({batch, seq_q, seq_k}), xt::zeros<double>({batch, seq_q, d_v})};
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < seq_q; ++i) {
      std::vector<double> s(seq_k, 0.0);
      std::vector<bool> allowed(seq_k);
      for (std::size_t j = 0; j < seq_k; ++j) {
        for (std::size_t d = 0; d < d_k; ++d) s[j] += q(at(q, b), i, d) * k(at(k, b), j, d);
        s[j] /= std::sqrt(static_cast<double>(d_k));
        allowed[j] = allowed_at(mask, {b, i, j});
      }
      const auto p = masked_softmax(s, allowed);
      for (std::size_t j = 0; j < seq_k; ++j) {
        r.weights(b, i, j) = p[j];
        for (std::size_t d = 0; d < d_v; ++d) r.output(b, i, d) += p[j] * v(at(v, b), j, d);
      }
    }
  return r;
}

struct SdpaCase {
  std::string label;
  Shape q, k, v;
  std::optional<AttendMask> mask;
};

std::vector<SdpaCase> sdpa_cases() {
  const Shape q{2, 3, 4}, k{2, 5, 4}, v{2, 5, 2};  // d_v != d_k
  return {{"no mask", q, k, v, std::nullopt},
          {"mask [seq_q, seq_k]", q, k, v, mask_from({3, 5}, {1, 1, 0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0})},
          {"padding-like mask [batch, 1, seq_k]", q, k, v, mask_from({2, 1, 5}, {1, 1, 1, 0, 0, 1, 1, 1, 1, 0})},
          {"key and value broadcast over the batch", q, {1, 5, 4}, {1, 5, 2}, std::nullopt},
          {"a fully masked query row", q, k, v, mask_from({3, 5}, {1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1})}};
}

TEST(ScaledDotProductAttention, ForwardMatchesTheNaiveReference) {
  for (const SdpaCase& c : sdpa_cases()) {
    SCOPED_TRACE(c.label);
    Generator gen(0);
    ScaledDotProductAttention<double> attention(gen);
    const auto q = random_tensor(c.q, 1), k = random_tensor(c.k, 2), v = random_tensor(c.v, 3);
    const auto [output, weights] = attention(q, k, v, c.mask);
    const SdpaReference r = naive_sdpa(q.value(), k.value(), v.value(), c.mask);
    EXPECT_LT(max_abs_diff(output.value(), r.output), 1e-12);
    EXPECT_LT(max_abs_diff(weights.value(), r.weights), 1e-12);
  }
}

TEST(ScaledDotProductAttention, GradcheckQueryKeyValue) {
  for (const SdpaCase& c : sdpa_cases()) {
    SCOPED_TRACE(c.label);
    Generator gen(0);
    ScaledDotProductAttention<double> attention(gen);
    EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return attention(x[0], x[1], x[2], c.mask).output; },
                                 {random_tensor(c.q, 4), random_tensor(c.k, 5), random_tensor(c.v, 6)}));
  }
}

TEST(ScaledDotProductAttention, ExtraLeadingAxesAndHeadsBroadcast) {
  // [batch, heads, seq, d] with a create_padding_mask-shaped [batch, 1, 1, seq_k] mask.
  Generator gen(0);
  ScaledDotProductAttention<double> attention(gen);
  const auto q = random_tensor({2, 2, 3, 4}, 1), k = random_tensor({2, 2, 4, 4}, 2), v = random_tensor({2, 2, 4, 3}, 3);
  const AttendMask mask = nn::create_padding_mask(IndexArray{{5, 6, 0, 0}, {7, 8, 9, 0}});
  const auto out = attention(q, k, v, mask);
  ASSERT_EQ(out.output.shape(), (Shape{2, 2, 3, 3}));
  ASSERT_EQ(out.attention_weights.shape(), (Shape{2, 2, 3, 4}));
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 2; ++h) {
      std::optional<AttendMask> row_mask = AttendMask(Mask(xt::view(mask.may_attend(), b, 0)));  // [1, seq_k] for this batch entry
      const SdpaReference r = naive_sdpa(Array(xt::view(q.value(), b, xt::range(h, h + 1))),
                                         Array(xt::view(k.value(), b, xt::range(h, h + 1))),
                                         Array(xt::view(v.value(), b, xt::range(h, h + 1))), row_mask);
      EXPECT_LT(max_abs_diff(Array(xt::view(out.output.value(), b, xt::range(h, h + 1))), r.output), 1e-12);
      EXPECT_LT(max_abs_diff(Array(xt::view(out.attention_weights.value(), b, xt::range(h, h + 1))), r.weights), 1e-12);
    }
}

TEST(ScaledDotProductAttention, DropoutIsActiveInTrainingAndIdentityInEval) {
  Generator gen(0);
  ScaledDotProductAttention<double> attention(gen, 0.5);
  std::vector<std::string> generators;
  for (const auto& [name, g] : attention.named_generators()) generators.push_back(name);
  EXPECT_EQ(generators, (std::vector<std::string>{"dropout.stream"}));
  EXPECT_EQ(attention.num_parameters(), 0u);
  const auto q = random_tensor({2, 6, 4}, 1), k = random_tensor({2, 6, 4}, 2), v = random_tensor({2, 6, 4}, 3);
  const SdpaReference r = naive_sdpa(q.value(), k.value(), v.value(), std::nullopt);
  const Array w1 = attention(q, k, v).attention_weights.value(), w2 = attention(q, k, v).attention_weights.value();
  std::size_t zeros = 0;
  for (std::size_t e = 0; e < w1.size(); ++e) {
    zeros += w1.data()[e] == 0.0;
    EXPECT_TRUE(w1.data()[e] == 0.0 || std::abs(w1.data()[e] - 2.0 * r.weights.data()[e]) < 1e-12);
  }
  EXPECT_GT(zeros, 0u);
  EXPECT_NE(w1, w2);
  attention.eval();
  EXPECT_LT(max_abs_diff(attention(q, k, v).attention_weights.value(), r.weights), 1e-12);
  // The default p = 0 is the identity in training too.
  ScaledDotProductAttention<double> plain(gen);
  EXPECT_LT(max_abs_diff(plain(q, k, v).attention_weights.value(), r.weights), 1e-12);
}

TEST(ScaledDotProductAttention, BadShapesNameTheOperands) {
  Generator gen(0);
  ScaledDotProductAttention<double> attention(gen);
  const auto q = random_tensor({2, 3, 4}, 1), k = random_tensor({2, 5, 4}, 2), v = random_tensor({2, 5, 2}, 3);
  EXPECT_TRUE(throws_with<ShapeError>([&] { attention(q, random_tensor({2, 5, 3}, 1), v); },
                                      {"ScaledDotProductAttention", "d_k", "query [2,3,4]", "key [2,5,3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { attention(q, k, random_tensor({2, 4, 2}, 1)); },
                                      {"ScaledDotProductAttention", "seq_k", "key [2,5,4]", "value [2,4,2]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { attention(random_tensor({4}, 1), k, v); },
                                      {"ScaledDotProductAttention", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { attention(q, random_tensor({3, 5, 4}, 1), random_tensor({3, 5, 2}, 1)); },
                                      {"ScaledDotProductAttention", "[2]", "[3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { attention(q, k, v, AttendMask(Mask::from_shape({3, 4}))); },
                                      {"ScaledDotProductAttention", "mask [3,4]", "[2,3,5]"}));
}

// ---------------------------------------------------------------------------------------------
// MultiHeadAttention: reference

struct Reference {
  Array attn;     // softmax [batch, heads, seq_q, seq_k]
  Array weights;  // attn after the dropout multiplier
  Array v;        // value projection [batch, seq_k, d_model]; head h, dim d at column h * d_k + d
  Array out;      // [batch, seq_q, d_model]
};

struct ReferenceOptions {
  std::optional<double> scale;  // default 1/sqrt(d_k)
  const Array* drop = nullptr;  // dropout multiplier (0 or 1/(1-p)), [batch, heads, seq_q, seq_k]
};


// The batch-first review's corrected forward in plain loops over the module's own parameter values.
Reference naive_mha(const MultiHeadAttention<double>& m, const Array& query, const Array& key, const Array& value,
                    const std::optional<AttendMask>& mask, const ReferenceOptions& options = {}) {
  const auto state = m.state_dict();
  const std::size_t heads = m.n_heads(), d_k = m.d_k(), d_model = heads * d_k;
  const std::size_t batch = query.shape()[0], seq_q = query.shape()[1], seq_k = key.shape()[1];
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(d_k)));
  const Array q = naive_linear(query, state, "query."), k = naive_linear(key, state, "key.");
  Reference r{xt::zeros<double>({batch, heads, seq_q, seq_k}), xt::zeros<double>({batch, heads, seq_q, seq_k}),
              naive_linear(value, state, "value."), {}};
  Array merged = xt::zeros<double>({batch, seq_q, d_model});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < seq_q; ++i) {
        std::vector<double> s(seq_k, 0.0);
        std::vector<bool> allowed(seq_k);
        for (std::size_t j = 0; j < seq_k; ++j) {
          for (std::size_t d = 0; d < d_k; ++d) s[j] += q(b, i, h * d_k + d) * k(b, j, h * d_k + d);
          s[j] *= scale;
          allowed[j] = allowed_at(mask, {b, h, i, j});
        }
        const auto p = masked_softmax(s, allowed);
        for (std::size_t j = 0; j < seq_k; ++j) {
          r.attn(b, h, i, j) = p[j];
          r.weights(b, h, i, j) = p[j] * (options.drop ? (*options.drop)(b, h, i, j) : 1.0);
          for (std::size_t d = 0; d < d_k; ++d) {
            merged(b, i, h * d_k + d) += r.weights(b, h, i, j) * r.v(b, j, h * d_k + d);
          }
        }
      }
  r.out = naive_linear(merged, state, "proj.");
  return r;
}

struct Case {
  std::string label;
  std::size_t batch, seq_q, seq_k;
  std::optional<AttendMask> mask;
};

std::vector<Case> cases() {
  const AttendMask padding = nn::create_padding_mask(IndexArray{{4, 5, 0}, {6, 0, 0}});
  const AttendMask look_ahead = nn::create_look_ahead_mask(3);
  return {{"self, no mask", 2, 3, 3, std::nullopt},
          {"cross (seq_q 2, seq_k 3), no mask", 2, 2, 3, std::nullopt},
          {"self, padding mask [batch, 1, 1, seq_k]", 2, 3, 3, padding},
          {"cross, padding mask", 2, 2, 3, padding},
          {"self, look-ahead mask [seq_q, seq_k]", 2, 3, 3, look_ahead},
          {"self, padding and look-ahead combined", 2, 3, 3, padding && look_ahead},
          {"cross, per-head mask [batch, heads, seq_q, seq_k]", 2, 2, 3, random_mask({2, kHeads, 2, 3}, 7)},
          {"cross, a fully masked query row", 2, 2, 3, mask_from({2, 3}, {0, 0, 0, 1, 0, 1})}};
}

struct Data {
  Tensor<double> query, key, value;
};

Data random_data(const Case& c, std::uint64_t seed) {
  return {random_tensor({c.batch, c.seq_q, kDModel}, seed), random_tensor({c.batch, c.seq_k, kDModel}, seed + 1),
          random_tensor({c.batch, c.seq_k, kDModel}, seed + 2)};
}

// ---------------------------------------------------------------------------------------------
// MultiHeadAttention: structure

TEST(BatchFirstMultiHeadAttention, ParameterNamesFollowTheBatchFirstReview) {
  Generator gen(0);
  MultiHeadAttention<double> mha(kDModel, kHeads, gen);
  EXPECT_EQ(names_of(mha), (std::vector<std::string>{"query.weight", "query.bias", "key.weight", "key.bias",
                                                     "value.weight", "value.bias", "proj.weight", "proj.bias"}));
  std::vector<std::string> generators;
  for (const auto& [name, g] : mha.named_generators()) generators.push_back(name);
  EXPECT_EQ(generators, (std::vector<std::string>{"attn_drop.stream"}));
}

TEST(BatchFirstMultiHeadAttention, ParameterCountIsTheClosedForm) {
  Generator gen(0);
  for (std::size_t d : {4u, 6u, 64u}) {
    SCOPED_TRACE("d_model " + std::to_string(d));
    EXPECT_EQ(MultiHeadAttention<double>(d, 2, gen).num_parameters(), 4 * (d * d + d));
  }
}

TEST(BatchFirstMultiHeadAttention, SeedShapeExamples) {
  // The batch-first package: batch 2, seq 8, d_model 64, 4 heads -> output [2, 8, 64], weights [2, 4, 8, 8].
  Generator gen(0);
  MultiHeadAttention<float> mha(64, 4, gen);
  const auto x = Tensor<float>::randn({2, 8, 64}, gen);
  const auto [output, weights] = mha(x, x, x);
  EXPECT_EQ(output.shape(), (Shape{2, 8, 64}));
  EXPECT_EQ(weights.shape(), (Shape{2, 4, 8, 8}));
  // The closed form 4 * (64^2 + 64); the batch-first reference's printout says 33,280, twice this, which no module
  // with these four Linear(64, 64) layers has.
  EXPECT_EQ(mha.num_parameters(), 16640u);
  // Its masks: create_padding_mask over [[1,2,3,0,0],[1,2,0,0,0]] and create_look_ahead_mask(10).
  const auto x5 = Tensor<float>::randn({2, 5, 64}, gen);
  const AttendMask padding = nn::create_padding_mask(IndexArray{{1, 2, 3, 0, 0}, {1, 2, 0, 0, 0}});
  EXPECT_EQ(mha(x5, x5, x5, padding).attention_weights.shape(), (Shape{2, 4, 5, 5}));
  const auto x10 = Tensor<float>::randn({2, 10, 64}, gen);
  EXPECT_EQ(mha(x10, x10, x10, nn::create_look_ahead_mask(10)).output.shape(), (Shape{2, 10, 64}));
  // Cross-attention: queries from one sequence, keys and values from another.
  EXPECT_EQ(mha(x5, x10, x10).attention_weights.shape(), (Shape{2, 4, 5, 10}));
}

// ---------------------------------------------------------------------------------------------
// MultiHeadAttention: values and gradients

TEST(BatchFirstMultiHeadAttention, ForwardMatchesTheNaiveReference) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    Generator gen(10);
    MultiHeadAttention<double> mha(kDModel, kHeads, gen);
    mha.eval();
    const Data x = random_data(c, 20);
    const auto [output, weights] = mha(x.query, x.key, x.value, c.mask);
    const Reference r = naive_mha(mha, x.query.value(), x.key.value(), x.value.value(), c.mask);
    EXPECT_LT(max_abs_diff(output.value(), r.out), 1e-12);
    EXPECT_LT(max_abs_diff(weights.value(), r.attn), 1e-12);
  }
}

TEST(BatchFirstMultiHeadAttention, GradcheckInputsAndEveryParameter) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    Generator gen(12);
    MultiHeadAttention<double> mha(kDModel, kHeads, gen);
    mha.eval();  // gradcheck runs the forward many times: no dropout
    const Data x = random_data(c, 22);
    EXPECT_TRUE(passes_gradcheck([&](const Inputs& in) { return mha(in[0], in[1], in[2], c.mask).output; },
                                 with_parameters({x.query, x.key, x.value}, mha)));
  }
}

TEST(BatchFirstMultiHeadAttention, WeightRowsSumToOneAndMaskedKeysGetExactlyZero) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    Generator gen(13);
    MultiHeadAttention<double> mha(kDModel, kHeads, gen);
    mha.eval();
    const Data x = random_data(c, 23);
    const auto [output, weights] = mha(x.query, x.key, x.value, c.mask);
    const Array& w = weights.value();
    for (std::size_t b = 0; b < c.batch; ++b)
      for (std::size_t i = 0; i < c.seq_q; ++i) {
        bool row_empty_in_every_head = true;
        for (std::size_t h = 0; h < kHeads; ++h) {
          double row = 0.0;
          bool any_allowed = false;
          for (std::size_t j = 0; j < c.seq_k; ++j) {
            const bool allowed = allowed_at(c.mask, {b, h, i, j});
            any_allowed = any_allowed || allowed;
            if (!allowed) {
              EXPECT_EQ(w(b, h, i, j), 0.0);
            }
            row += w(b, h, i, j);
          }
          EXPECT_NEAR(row, any_allowed ? 1.0 : 0.0, 1e-12);
          row_empty_in_every_head = row_empty_in_every_head && !any_allowed;
        }
        // A query with no key to attend to outputs exactly proj.bias (documented in the header).
        if (row_empty_in_every_head) {
          for (std::size_t o = 0; o < kDModel; ++o) EXPECT_EQ(output.value()(b, i, o), mha.proj().bias().value()(o));
        }
      }
  }
}

TEST(BatchFirstMultiHeadAttention, WeightsGradIsDLossDWeights) {
  for (const Case& c : {cases()[1], cases()[3], cases()[7]}) {
    SCOPED_TRACE(c.label);
    Generator gen(14);
    MultiHeadAttention<double> mha(kDModel, kHeads, gen);
    mha.eval();
    const Data x = random_data(c, 24);
    const auto seed = random_tensor({c.batch, c.seq_q, kDModel}, 25, false);
    Tensor<double> weights;
    {
      GradientTape tape;
      auto result = mha(x.query, x.key, x.value, c.mask);
      weights = result.attention_weights;
      tape.backward(sum(result.output * seed));
    }
    ASSERT_TRUE(weights.has_grad());
    // L = sum(R * proj(merged)), merged[b, i, h*d_k + d] = sum_j W[b, h, i, j] v[b, j, h*d_k + d], so
    // dL/dW[b, h, i, j] = sum_d (sum_o R[b, i, o] W_proj[o, h*d_k + d]) v[b, j, h*d_k + d].
    const Reference r = naive_mha(mha, x.query.value(), x.key.value(), x.value.value(), c.mask);
    const Array& w_proj = mha.proj().weight().value();
    Array expected = xt::zeros<double>({c.batch, kHeads, c.seq_q, c.seq_k});
    for (std::size_t b = 0; b < c.batch; ++b)
      for (std::size_t h = 0; h < kHeads; ++h)
        for (std::size_t i = 0; i < c.seq_q; ++i)
          for (std::size_t j = 0; j < c.seq_k; ++j)
            for (std::size_t d = 0; d < kDk; ++d) {
              double d_merged = 0.0;
              for (std::size_t o = 0; o < kDModel; ++o) d_merged += seed.value()(b, i, o) * w_proj(o, h * kDk + d);
              expected(b, h, i, j) += d_merged * r.v(b, j, h * kDk + d);
            }
    EXPECT_LT(max_abs_diff(weights.grad(), expected), 1e-12);
  }
}

TEST(BatchFirstMultiHeadAttention, DropoutIsActiveInTrainingAndIdentityInEval) {
  Generator gen(16);
  MultiHeadAttention<double> mha(kDModel, kHeads, gen, 0.5);
  const Case c = cases()[2];
  const Data x = random_data(c, 27);
  const auto train1 = mha(x.query, x.key, x.value, c.mask);
  const auto train2 = mha(x.query, x.key, x.value, c.mask);
  EXPECT_GT(max_abs_diff(train1.output.value(), train2.output.value()), 1e-6);  // the stream moves on
  mha.eval();
  const auto eval1 = mha(x.query, x.key, x.value, c.mask);
  EXPECT_EQ(eval1.output.value(), mha(x.query, x.key, x.value, c.mask).output.value());
  const Reference r = naive_mha(mha, x.query.value(), x.key.value(), x.value.value(), c.mask);
  EXPECT_LT(max_abs_diff(eval1.output.value(), r.out), 1e-12);
}

// ---------------------------------------------------------------------------------------------
// The batch-first review's six bugs: each test fails on a module that has that bug.

class BatchFirstReviewedBugs : public ::testing::Test {
 protected:
  // seq_q 4 and seq_k 5 differ from d_k 3, so a 1/sqrt(S) scale cannot pass for 1/sqrt(d_k).
  Case c{"cross, padding mask", 2, 4, 5, nn::create_padding_mask(IndexArray{{1, 2, 3, 0, 0}, {4, 5, 6, 7, 0}})};
  Generator gen{31};
  MultiHeadAttention<double> mha{kDModel, kHeads, gen};
  Data x = random_data(c, 32);

  void SetUp() override { mha.eval(); }
  nn::mha::AttentionOutput<double> run() { return mha(x.query, x.key, x.value, c.mask); }
  Reference reference(const ReferenceOptions& options = {}) {
    return naive_mha(mha, x.query.value(), x.key.value(), x.value.value(), c.mask, options);
  }
};

TEST_F(BatchFirstReviewedBugs, A_QueryKeyValueProjectionsAreApplied) {
  // Without the projections the output would not move when their weights do.
  for (const std::string name : {"query.weight", "key.weight", "value.weight"}) {
    SCOPED_TRACE(name);
    const Array before = run().output.value();
    EXPECT_LT(max_abs_diff(before, reference().out), 1e-12);
    parameter(mha, name).mutable_value() *= 1.7;
    const Array after = run().output.value();
    EXPECT_GT(max_abs_diff(before, after), 1e-4);
    EXPECT_LT(max_abs_diff(after, reference().out), 1e-12);
  }
}

TEST_F(BatchFirstReviewedBugs, B_ScaleIsOneOverSqrtDkNotSqrtSeqLen) {
  const Array weights = run().attention_weights.value();
  EXPECT_LT(max_abs_diff(weights, reference().attn), 1e-12);
  for (double wrong : {1.0 / std::sqrt(4.0), 1.0 / std::sqrt(5.0), 1.0}) {
    EXPECT_GT(max_abs_diff(weights, reference({.scale = wrong}).attn), 1e-4);
  }
}

TEST_F(BatchFirstReviewedBugs, C_MaskedKeysGetExactlyZeroWeightNotAMultipliedScore) {
  // mask * scores would leave masked keys a weight of exp(0) / sum > 0.
  const Array weights = run().attention_weights.value();
  std::size_t masked = 0;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < kHeads; ++h)
      for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 5; ++j)
          if (!allowed_at(c.mask, {b, h, i, j})) {
            EXPECT_EQ(weights(b, h, i, j), 0.0);
            ++masked;
          }
  EXPECT_EQ(masked, (2u + 1u) * kHeads * 4);
}

TEST_F(BatchFirstReviewedBugs, D_OutputProjectionIsApplied) {
  const Array before = run().output.value();
  parameter(mha, "proj.weight").mutable_value() *= -0.5;
  const Array after = run().output.value();
  EXPECT_GT(max_abs_diff(before, after), 1e-4);
  EXPECT_LT(max_abs_diff(after, reference().out), 1e-12);
}

TEST_F(BatchFirstReviewedBugs, E_AttentionDropoutIsAppliedInTraining) {
  // Replays the attn_drop stream: one float uniform draw per weight, row-major; a weight is kept when
  // u >= p and then scaled by 1/(1-p) (the dropout op's documented contract).
  Generator gen2(33);
  MultiHeadAttention<double> train(kDModel, kHeads, gen2, 0.4);
  Generator replay = *train.named_generators().at(0).second;  // the stream's state before the forward
  const auto result = train(x.query, x.key, x.value, c.mask);
  Array drop = xt::zeros<double>(Shape{2, kHeads, 4, 5});
  std::vector<float> u(drop.size());
  replay.fill_uniform(u.data(), u.size());
  for (std::size_t e = 0; e < u.size(); ++e) drop.data()[e] = u[e] >= 0.4 ? 1.0 / 0.6 : 0.0;
  const ReferenceOptions with_dropout{.scale = std::nullopt, .drop = &drop};
  const Reference r = naive_mha(train, x.query.value(), x.key.value(), x.value.value(), c.mask, with_dropout);
  std::size_t zeroed = 0;  // weights that softmax made positive and dropout zeroed
  for (std::size_t e = 0; e < u.size(); ++e) zeroed += drop.data()[e] == 0.0 && r.attn.data()[e] > 0.0;
  EXPECT_GT(zeroed, 0u);
  EXPECT_LT(max_abs_diff(result.attention_weights.value(), r.weights), 1e-12);
  EXPECT_LT(max_abs_diff(result.output.value(), r.out), 1e-12);
  train.eval();
  EXPECT_GT(max_abs_diff(result.output.value(), train(x.query, x.key, x.value, c.mask).output.value()), 1e-6);
}

TEST_F(BatchFirstReviewedBugs, F_SoftmaxIsOverTheKeyAxisOnly) {
  // Each [b, h, i, :] row sums to 1; a softmax over dims (2, 3) would make each [b, h] plane sum to 1.
  const Array weights = run().attention_weights.value();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < kHeads; ++h)
      for (std::size_t i = 0; i < 4; ++i) {
        double row = 0.0;
        for (std::size_t j = 0; j < 5; ++j) row += weights(b, h, i, j);
        EXPECT_NEAR(row, 1.0, 1e-12);
      }
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(BatchFirstMultiHeadAttention, DModelMustBeAMultipleOfNHeads) {
  Generator gen(0);
  EXPECT_TRUE(throws_with<ValueError>([&] { MultiHeadAttention<double>(6, 4, gen); },
                                      {"MultiHeadAttention", "d_model (6)", "n_heads (4)"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { MultiHeadAttention<double>(6, 0, gen); },
                                      {"MultiHeadAttention", "n_heads (0)"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { MultiHeadAttention<double>(6, 2, gen, -0.1); }, {"Dropout", "[0, 1]"}));
}

TEST(BatchFirstMultiHeadAttention, BadInputShapesNameTheArgument) {
  Generator gen(0);
  MultiHeadAttention<double> mha(kDModel, kHeads, gen);
  const auto q = random_tensor({3, 2, 6}, 1), kv = random_tensor({3, 4, 6}, 2);
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(random_tensor({3, 2, 5}, 1), kv, kv); },
                                      {"MultiHeadAttention(d_model=6, n_heads=2)", "query", "[3,2,5]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(q, random_tensor({4, 6}, 1), kv); }, {"key", "[4,6]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(q, kv, random_tensor({3, 5, 6}, 1)); },
                                      {"key [3,4,6]", "value [3,5,6]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(q, random_tensor({2, 4, 6}, 1), random_tensor({2, 4, 6}, 2)); },
                                      {"key [2,4,6]", "query [3,2,6]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { mha(q, kv, kv, AttendMask(Mask::from_shape({2, 2}))); },
                                      {"MultiHeadAttention(d_model=6, n_heads=2)", "mask [2,2]", "[3,2,2,4]"}));
}

}  // namespace
}  // namespace tapegrad
