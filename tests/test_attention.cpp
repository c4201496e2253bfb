// attention_softmax: the fused scale + mask + softmax of attention, against the same computation
// composed from the primitive ops (which have their own tests), plus gradchecks and bad inputs.
#include <cstring>
#include <limits>

#include <xtensor/xoperation.hpp>

#include "autograd/kernels/parallel.h"
#include "autograd/ops/attention.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/softmax.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

namespace tapegrad {
namespace {

// A random mask of `shape` (true = may attend) with roughly one position in three masked.
AttendMask random_mask(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  const auto u = Tensor<double>::uniform(shape, gen);
  return AttendMask(Mask(u.value() > 0.33));
}

// What attention modules write out: scale, fill the masked scores with lowest(), softmax.
Tensor<double> composed(const Tensor<double>& x, const std::optional<AttendMask>& may_attend, double scale) {
  Tensor<double> scaled = x * scale;
  if (may_attend) scaled = masked_fill(scaled, may_attend->blocked(), std::numeric_limits<double>::lowest());
  return softmax(scaled, -1);
}

struct AttentionCase {
  Shape scores;
  std::optional<Shape> mask;
};

// No mask, a full mask, masks broadcast along queries, batch and keys, a 0-dim mask, a vector.
const std::vector<AttentionCase> kAttentionCases = {
    {{2, 3, 4}, std::nullopt}, {{2, 3, 4}, Shape{2, 3, 4}}, {{2, 3, 4}, Shape{2, 1, 4}}, {{2, 3, 4}, Shape{3, 4}},
    {{2, 3, 4}, Shape{2, 3, 1}}, {{2, 3, 4}, Shape{}},      {{5}, Shape{5}},             {{3, 1, 2, 6}, Shape{1, 2, 6}},
};

TEST(AttentionSoftmax, ForwardAndBackwardEqualTheComposition) {
  for (const AttentionCase& c : kAttentionCases) {
    SCOPED_TRACE(format_shape(c.scores) + (c.mask ? " mask " + format_shape(*c.mask) : " no mask"));
    const std::optional<AttendMask> mask = c.mask ? std::optional<AttendMask>(random_mask(*c.mask, 7)) : std::nullopt;
    const auto x = random_tensor(c.scores, 1, true, -3.0, 3.0);
    const auto x_ref = random_tensor(c.scores, 1, true, -3.0, 3.0);
    const auto seed = random_tensor(c.scores, 2).value();
    Tensor<double> fused, reference;
    {
      GradientTape tape;
      fused = attention_softmax(x, mask, 0.37);
      tape.backward(fused, seed);
    }
    {
      GradientTape tape;
      reference = composed(x_ref, mask, 0.37);
      tape.backward(reference, seed);
    }
    EXPECT_LT(max_abs_diff(fused.value(), reference.value()), 1e-14);
    EXPECT_LT(max_abs_diff(x.grad(), x_ref.grad()), 1e-14);
  }
}

TEST(AttentionSoftmax, Gradcheck) {
  for (const AttentionCase& c : kAttentionCases) {
    SCOPED_TRACE(format_shape(c.scores) + (c.mask ? " mask " + format_shape(*c.mask) : " no mask"));
    const std::optional<AttendMask> mask = c.mask ? std::optional<AttendMask>(random_mask(*c.mask, 8)) : std::nullopt;
    EXPECT_TRUE(passes_gradcheck([&](const Inputs& v) { return attention_softmax(v[0], mask, 1.7); },
                                 {random_tensor(c.scores, 3)}));
  }
}

TEST(AttentionSoftmax, FullyMaskedRowIsUniformWithZeroGradient) {
  const AttendMask mask(Mask{{true, false, true}, {false, false, false}});
  const auto x = random_tensor({2, 3}, 4);
  Tensor<double> y;
  {
    GradientTape tape;
    y = attention_softmax(x, std::optional<AttendMask>(mask), 1.0);
    tape.backward(y, xt::xarray<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  }
  EXPECT_EQ(y.value()(0, 1), 0.0);
  EXPECT_NEAR(y.value()(0, 0) + y.value()(0, 2), 1.0, 1e-15);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_DOUBLE_EQ(y.value()(1, k), 1.0 / 3.0);
    EXPECT_EQ(x.grad()(1, k), 0.0);
  }
  EXPECT_EQ(x.grad()(0, 1), 0.0);
  EXPECT_NE(x.grad()(0, 0), 0.0);
}

TEST(AttentionSoftmax, SameBitsAtAnyThreadCount) {
  const testing_support::ThreadCountTest thread_count_test;
  Generator gen(5);
  auto x = Tensor<float>::uniform({64, 40, 40}, gen, -4.0f, 4.0f, true);
  const std::optional<AttendMask> mask = random_mask({64, 1, 40}, 9);
  std::vector<xt::xarray<float>> runs;
  for (std::size_t threads : {1, 2}) {
    set_num_threads(threads);
    x.zero_grad();
    GradientTape tape;
    const auto y = attention_softmax(x, mask, 0.125f);
    tape.backward(y, xt::xarray<float>(x.value()));
    runs.push_back(y.value());
    runs.push_back(x.grad());
  }
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(std::memcmp(runs[i].data(), runs[i + 2].data(), runs[i].size() * sizeof(float)), 0) << "result " << i;
}

TEST(AttentionSoftmax, BadInputsThrowNamingTheShapes) {
  const auto x = random_tensor({2, 3, 4}, 6);
  EXPECT_TRUE(throws_with<ShapeError>([&] { attention_softmax(x, std::optional<AttendMask>(random_mask({3, 3}, 1)), 1.0); },
                                      {"attention_softmax", "may_attend", "[3,3]", "[2,3,4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { attention_softmax(random_tensor({}, 1), std::nullopt, 1.0); },
                                      {"attention_softmax", "at least 1 dim"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { attention_softmax(x, std::nullopt, std::numeric_limits<double>::infinity()); },
      {"attention_softmax", "scale", "inf"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { attention_softmax(Tensor<double>(), std::nullopt, 1.0); },
                                      {"attention_softmax", "'scores'"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// Rows 0 and 2 of batch 0 allow some keys; every query of batch 1 is fully masked.
AttendMask batch_mask() { return AttendMask(Mask{{{true, false, true, true}}, {{false, false, false, false}}}); }
// Per [query, key]: query 1 is fully masked in every batch.
AttendMask query_mask() {
  return AttendMask(Mask{{true, true, false, true}, {false, false, false, false}, {false, true, true, false}});
}

TAPEGRAD_OP_SPEC(attention_softmax) {
  OpSpec s("attention_softmax", "attention");
  s.remark = "fused scale + mask + softmax";
  s.no_pytorch = "PyTorch 1.13 has no fused scale-mask-softmax op; its parts are sampled as softmax and masked_fill";
  s.samples = {
      // attention_softmax: no mask, masks broadcast over queries or batches, fully masked rows.
      OpCase("attention_softmax_no_mask", [](const auto& x) { return attention_softmax(x[0], std::nullopt, 0.7); },
       [] { return V{leaf({2, 3, 4}, 320)}; }).at_scale([] { return V{leaf({64, 33, 61}, 919)}; }),
      {"attention_softmax_vector", [](const auto& x) { return attention_softmax(x[0], std::nullopt, 1.3); },
       [] { return V{leaf({5}, 321)}; }},
      {"attention_softmax_batch_mask",
       [](const auto& x) { return attention_softmax(x[0], std::optional<AttendMask>(batch_mask()), 0.5); },
       [] { return V{leaf({2, 3, 4}, 322)}; }},
      {"attention_softmax_query_mask",
       [](const auto& x) { return attention_softmax(x[0], std::optional<AttendMask>(query_mask()), 1.5); },
       [] { return V{leaf({2, 3, 4}, 323)}; }},
      {"attention_softmax_times_input",
       [](const auto& x) { return mul(attention_softmax(x[0], std::optional<AttendMask>(query_mask()), 0.9), x[1]); },
       [] { return V{leaf({2, 3, 4}, 324), leaf({3, 4}, 325)}; }},
  };
  s.errors = {
      error_input<ShapeError>("attention_softmax_mask_does_not_broadcast", "`attention_softmax`", "may_attend [4] for scores [2,3]",
                  [] { return attention_softmax(bad_inputs::zeros({2, 3}), AttendMask(bad_inputs::mask_of({4})), 1.0); },
                  {"attention_softmax", "[4]", "[2,3]"}),
      error_input<ShapeError>("attention_softmax_0d_scores", "`attention_softmax`", "0-d scores",
                  [] { return attention_softmax(bad_inputs::zeros({}), std::nullopt, 1.0); },
                  {"attention_softmax", "[]"}),
      error_input<ValueError>("attention_softmax_nan_scale", "`attention_softmax`", "scale NaN",
                  [] { return attention_softmax(bad_inputs::zeros({2, 3}), std::nullopt, bad_inputs::nan); },
                  {"attention_softmax", "scale", "nan"}),
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
