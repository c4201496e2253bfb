#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

#include "autograd/core/custom_op.h"
#include "autograd/base/generator.h"
#include "autograd/ops/activation.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/masking.h"
#include "autograd/ops/pointwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

Tensor<double> scalar(double v, bool requires_grad = true) { return Tensor<double>(xt::xarray<double>{v}, requires_grad); }

TEST(Tape, RecordsOnlyOpsWhoseInputsNeedGradient) {
  const auto x = scalar(2.0);
  const auto c = scalar(3.0, false);
  GradientTape tape;
  const auto constant_only = c * c;  // nothing to differentiate: not recorded
  EXPECT_EQ(tape.size(), 0u);
  EXPECT_FALSE(constant_only.requires_grad());
  const auto y = x * c;
  EXPECT_EQ(tape.size(), 1u);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
}

TEST(Tape, NoTapeMeansNoRecording) {
  const auto x = scalar(2.0);
  const auto y = exp(x);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(throws_with<TapeError>([&] { GradientTape tape; tape.backward(y); }, {"does not require a gradient"}));
}

TEST(Tape, BackwardSeedsOneAndFreesEntries) {
  const auto x = scalar(2.0);
  GradientTape tape;
  const auto y = x * x * x;  // dy/dx = 3x^2 = 12
  EXPECT_EQ(tape.size(), 2u);
  tape.backward(y);
  EXPECT_DOUBLE_EQ(x.grad()(0), 12.0);
  EXPECT_EQ(tape.size(), 0u);
}

TEST(Tape, SecondBackwardOnNonPersistentTapeThrows) {
  const auto x = scalar(2.0);
  GradientTape tape;
  const auto y = x * x;
  tape.backward(y);
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(y); }, {"already used", "persistent"}));
}

TEST(Tape, PersistentTapeAllowsRepeatedBackwardAndLeavesAccumulate) {
  const auto x = scalar(2.0);
  GradientTape tape(/*persistent=*/true);
  const auto y = x * x;
  tape.backward(y);
  tape.backward(y);
  EXPECT_DOUBLE_EQ(x.grad()(0), 8.0);  // 2 * (2x)
  EXPECT_EQ(tape.size(), 1u);
}

TEST(Tape, LeafGradientsAccumulateAcrossTapesUntilZeroGrad) {
  const auto x = scalar(3.0);
  for (int i = 0; i < 2; ++i) {
    GradientTape tape;
    tape.backward(x * 2.0);
  }
  EXPECT_DOUBLE_EQ(x.grad()(0), 4.0);
  x.node()->clear_grad();
  EXPECT_FALSE(x.has_grad());
}

TEST(Tape, IntermediateGradientsAreReleasedUnlessRetained) {
  const auto x = scalar(2.0);
  GradientTape tape;
  auto h = x * 3.0;
  auto kept = x * 5.0;
  kept.retain_grad();
  tape.backward(h * kept);  // d/dh = kept = 10, d/dkept = h = 6
  EXPECT_FALSE(h.has_grad());
  ASSERT_TRUE(kept.has_grad());
  EXPECT_DOUBLE_EQ(kept.grad()(0), 6.0);
  EXPECT_DOUBLE_EQ(x.grad()(0), 3.0 * 10.0 + 5.0 * 6.0);
}

TEST(Tape, RetainedGradientIsNotPropagatedTwiceOnPersistentTape) {
  auto x = scalar(2.0);
  GradientTape tape(/*persistent=*/true);
  auto h = x * 3.0;
  h.retain_grad();
  const auto y = h * h;
  tape.backward(y);
  x.zero_grad();
  tape.backward(y);
  EXPECT_DOUBLE_EQ(h.grad()(0), 12.0);          // 2h of the latest walk, not the sum of two
  EXPECT_DOUBLE_EQ(x.grad()(0), 12.0 * 3.0);  // from the second walk only
}

TEST(Tape, SavedTensorsAreFreedAfterBackward) {
  const auto x = scalar(2.0);
  GradientTape tape;
  std::weak_ptr<Node<double>> intermediate;
  Tensor<double> y;
  {
    const auto h = exp(x);
    intermediate = h.node();
    y = h * h;
  }
  EXPECT_FALSE(intermediate.expired());  // the tape holds it for the backward
  tape.backward(y);
  EXPECT_TRUE(intermediate.expired());
}

TEST(Tape, DeepGraphDoesNotOverflowTheStack) {
  auto x = scalar(1.0);
  GradientTape tape;
  Tensor<double> y = x;
  constexpr int depth = 200000;
  for (int i = 0; i < depth; ++i) y = y + 1.0;
  tape.backward(y);
  EXPECT_DOUBLE_EQ(x.grad()(0), 1.0);
  EXPECT_EQ(tape.size(), 0u);
}

TEST(Tape, NonScalarOutputNeedsASeedOfItsShape) {
  const Tensor<double> x(xt::xarray<double>{1.0, 2.0}, true);
  GradientTape tape(true);
  const auto y = x * x;
  EXPECT_TRUE(throws_with<ShapeError>([&] { tape.backward(y); }, {"backward", "[2]", "seed"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { tape.backward(y, xt::xarray<double>{1.0, 1.0, 1.0}); }, {"[3]", "[2]"}));
  tape.backward(y, xt::xarray<double>{1.0, 10.0});
  EXPECT_EQ(x.grad(), (xt::xarray<double>{2.0, 40.0}));
}

TEST(Tape, NoGradGuardPausesRecording) {
  const auto x = scalar(2.0);
  GradientTape tape;
  {
    NoGradGuard pause;
    EXPECT_FALSE(is_recording());
    EXPECT_FALSE((x * x).requires_grad());
  }
  EXPECT_TRUE(is_recording());
  EXPECT_EQ(tape.size(), 0u);
}

TEST(Tape, ATapeMadeInsideANoGradGuardRecordsAndThePausedOneDoesNot) {
  const auto x = scalar(2.0);
  GradientTape outer;
  NoGradGuard pause;
  EXPECT_FALSE(is_recording());
  {
    GradientTape inner;
    EXPECT_TRUE(is_recording());
    inner.backward(x * x * x);
    EXPECT_DOUBLE_EQ(x.grad()(0), 12.0);
  }
  EXPECT_FALSE(is_recording());
  EXPECT_EQ(outer.size(), 0u);
}

TEST(Tape, NestedTapesBothRecordAndEachCanRunBackward) {
  auto x = scalar(2.0);
  GradientTape outer;
  const auto a = x * 3.0;  // only the outer tape sees this
  Tensor<double> b, c;
  {
    GradientTape inner;
    b = a * x;  // both tapes record this
    c = x * x;  // and this
    EXPECT_EQ(inner.size(), 2u);
    EXPECT_EQ(outer.size(), 3u);
    inner.backward(c);  // everything c depends on is on the inner tape: dc/dx = 2x
    EXPECT_DOUBLE_EQ(x.grad()(0), 4.0);
  }
  x.zero_grad();
  outer.backward(b);  // full graph: b = 3x^2, db/dx = 6x
  EXPECT_DOUBLE_EQ(x.grad()(0), 12.0);
}

TEST(Tape, InnerTapeRefusesAGradientThatWouldStopAtAnOuterTapesIntermediate) {
  auto x = scalar(2.0);
  GradientTape outer;
  const auto a = x * 3.0;  // recorded before the inner tape began
  GradientTape inner;
  const auto b = a * x;
  // The inner tape cannot carry db/da on to x: it used to stop there silently (db/dx = a = 6
  // instead of 12).
  EXPECT_TRUE(throws_with<TapeError>([&] { inner.backward(b); }, {"mul_scalar", "not on this tape"}));
}

TEST(Tape, OutputFromAnotherTapeIsRejected) {
  const auto x = scalar(2.0);
  GradientTape other(true);
  const auto y = x * x;
  GradientTape mine;  // created after y was recorded
  EXPECT_TRUE(throws_with<TapeError>([&] { mine.backward(y); }, {"not recorded by this tape"}));
}

TEST(Tape, RecordingIsPerThread) {
  const auto x = scalar(2.0);
  GradientTape tape;
  bool other_thread_recorded = true;
  std::thread([&] { other_thread_recorded = (x * x).requires_grad(); }).join();
  EXPECT_FALSE(other_thread_recorded);
  EXPECT_EQ(tape.size(), 0u);
}

TEST(Tape, OnlyLeavesCanChangeRequiresGrad) {
  const auto x = scalar(2.0);
  GradientTape tape;
  auto y = x * x;
  EXPECT_TRUE(throws_with<TapeError>([&] { y.set_requires_grad(false); }, {"set_requires_grad", "mul"}));
}

// ---- GradientTape::gradient ------------------------------------------------------------------

TEST(TapeGradient, ReturnsGradientsOfLeavesAndIntermediatesAndTouchesNoGrad) {
  auto w = Tensor<double>(xt::xarray<double>{1.0, 2.0}, true);
  auto b = scalar(0.5);
  {
    GradientTape earlier;
    earlier.backward(sum(w * 7.0));  // w.grad() = 7 before gradient() runs
  }
  GradientTape tape;
  const auto h = w * w;                      // dL/dh = 3b
  const auto loss = sum(h * 3.0 * b);        // dL/dw = 6bw, dL/db = 3 sum(w^2)
  const auto g = tape.gradient(loss, {w, h, b});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].value(), xt::xarray<double>({3.0, 6.0}));
  EXPECT_EQ(g[1].value(), xt::xarray<double>({1.5, 1.5}));
  EXPECT_DOUBLE_EQ(g[2].value()(0), 15.0);
  EXPECT_FALSE(g[0].requires_grad());
  EXPECT_EQ(w.grad(), xt::xarray<double>({7.0, 7.0}));  // untouched
  EXPECT_FALSE(b.has_grad());
  EXPECT_FALSE(h.has_grad());
}

TEST(TapeGradient, UnconnectedSourceGetsZerosAndARepeatedSourceTheSameGradient) {
  auto x = scalar(3.0), unused = Tensor<double>::ones({2}, true);
  GradientTape tape;
  const auto g = tape.gradient(sum(x * x), {x, unused, x});
  EXPECT_DOUBLE_EQ(g[0].value()(0), 6.0);
  EXPECT_EQ(g[1].value(), xt::xarray<double>({0.0, 0.0}));
  EXPECT_DOUBLE_EQ(g[2].value()(0), 6.0);
}

TEST(TapeGradient, EqualsWhatBackwardAccumulatesAndRunsHooks) {
  auto x = Tensor<double>(xt::xarray<double>{0.3, -1.2, 2.0}, true);
  const auto f = [&] { return sum(exp(x) * x); };
  xt::xarray<double> from_backward;
  {
    GradientTape tape;
    tape.backward(f());
    from_backward = x.grad();
    x.zero_grad();
  }
  GradientTape tape;
  EXPECT_EQ(tape.gradient(f(), {x})[0].value(), from_backward);  // same bits
  int calls = 0;
  x.register_hook([&](const xt::xarray<double>& g) {
    ++calls;
    return std::optional<xt::xarray<double>>(g * 2.0);
  });
  GradientTape hooked;
  EXPECT_EQ(hooked.gradient(f(), {x})[0].value(), xt::xarray<double>(from_backward * 2.0));
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(x.has_grad());
}

TEST(TapeGradient, BadTargetsAndSourcesAreErrors) {
  auto x = Tensor<double>::ones({2}, true);
  GradientTape other(/*persistent=*/true);
  const auto from_other = x * 2.0;
  GradientTape tape(/*persistent=*/true);
  const auto y = x * 3.0;
  EXPECT_TRUE(throws_with<ShapeError>([&] { tape.gradient(y, {x}); }, {"gradient", "target [2]", "more than one element"}));
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.gradient(sum(y), {Tensor<double>::ones({2})}); },
                                     {"gradient: source 0 [2]", "does not require a gradient"}));
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.gradient(sum(y), {from_other}); },
                                     {"gradient: source 0 [2] (from mul_scalar) was not recorded by this tape"}));
}

// ---- What a formula keeps (detail::Edge): values backward does not read are freed ----

// Runs make(2 x) under the caller's tape and drops every handle to its result but `node`, a plain pointer to
// the result's node (no hold on its value), so what keeps the value is the tape alone.
template <class Make>
std::shared_ptr<Node<double>> intermediate_without_handles(const Tensor<double>& x, Tensor<double>& loss, Make make) {
  Tensor<double> h = mul(x, 2.0);  // mul_scalar's derivative is g * s: it keeps nothing of x or h
  std::shared_ptr<Node<double>> node = h.node();
  loss = sum(make(h));
  return node;
}

TEST(SavedValues, AnInputOnlyShapeOpsReadIsFreedWithItsLastHandle) {
  const Tensor<double> x(xt::xarray<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, true);
  GradientTape tape;
  Tensor<double> loss;
  // reshape, sum and add keep edges only: h's value has no reader left.
  const auto node = intermediate_without_handles(x, loss, [](const Tensor<double>& h) {
    return add(reshape(h, {3, 2}), 1.0);
  });
  EXPECT_TRUE(node->value_released());
  EXPECT_EQ(node->value.size(), 0u);
  EXPECT_EQ(node->value_shape(), (Shape{2, 3}));
  tape.backward(loss);
  EXPECT_EQ(max_abs_diff(x.grad(), xt::xarray<double>(xt::full_like(x.value(), 2.0))), 0.0);
}

TEST(SavedValues, AnInputTheFormulaReadsIsKept) {
  const Tensor<double> x(xt::xarray<double>{0.5, -1.0, 2.0}, true);
  GradientTape tape;
  Tensor<double> loss;
  const auto node = intermediate_without_handles(x, loss, [](const Tensor<double>& h) { return sin(h); });
  EXPECT_FALSE(node->value_released());  // sin's derivative is g cos(x)
  tape.backward(loss);
  const xt::xarray<double> expected = 2.0 * xt::cos(2.0 * x.value());
  EXPECT_LT(max_abs_diff(x.grad(), expected), 1e-15);
}

TEST(SavedValues, AnOutputTheFormulaReadsIsKept) {
  const Tensor<double> x(xt::xarray<double>{0.5, -1.0, 2.0}, true);
  GradientTape tape;
  Tensor<double> loss;
  std::shared_ptr<Node<double>> exp_node;
  const auto h_node = intermediate_without_handles(x, loss, [&](const Tensor<double>& h) {
    Tensor<double> e = exp(h);  // exp's derivative is g y: its own output, not its input
    exp_node = e.node();
    return e;
  });
  EXPECT_TRUE(h_node->value_released());
  EXPECT_FALSE(exp_node->value_released());
  tape.backward(loss);
  const xt::xarray<double> expected = 2.0 * xt::exp(2.0 * x.value());
  EXPECT_LT(max_abs_diff(x.grad(), expected), 1e-14);
}

TEST(SavedValues, AHandleKeepsTheValueAndAReleasedNodeCannotBeReopened) {
  const Tensor<double> x(xt::xarray<double>{1.0, 2.0}, true);
  GradientTape tape;
  Tensor<double> h = mul(x, 2.0);
  Tensor<double> kept_copy = h;  // a second handle
  const std::shared_ptr<Node<double>> node = h.node();
  const Tensor<double> loss = sum(h);
  h = Tensor<double>();
  EXPECT_FALSE(node->value_released());  // kept_copy still holds it
  EXPECT_EQ(max_abs_diff(kept_copy.value(), xt::xarray<double>{2.0, 4.0}), 0.0);
  kept_copy = Tensor<double>();
  EXPECT_TRUE(node->value_released());
  EXPECT_TRUE(throws_with<TapeError>([&] { Tensor<double> reopened(node); }, {"was freed", "[2]", "mul_scalar"}));
  tape.backward(loss);  // the gradient still flows through the node
  EXPECT_EQ(max_abs_diff(x.grad(), xt::xarray<double>{2.0, 2.0}), 0.0);
}

TEST(SavedValues, RetainedGradientOfAReleasedIntermediate) {
  const Tensor<double> x(xt::xarray<double>{1.0, 2.0}, true);
  GradientTape tape;
  Tensor<double> h = mul(x, 3.0);
  h.retain_grad();
  const std::shared_ptr<Node<double>> node = h.node();
  const Tensor<double> loss = sum(mul(h, 2.0));
  h = Tensor<double>();
  tape.backward(loss);
  ASSERT_TRUE(node->grad.has_value());
  EXPECT_EQ(max_abs_diff(*node->grad, xt::xarray<double>{2.0, 2.0}), 0.0);
}

TEST(SavedValues, LeavesKeepTheirValueWhenTheirHandlesGo) {
  GradientTape tape;
  std::shared_ptr<Node<double>> node;
  Tensor<double> loss;
  {
    const Tensor<double> w(xt::xarray<double>{1.0, 2.0}, true);
    node = w.node();
    loss = sum(reshape(w, {2, 1}));
  }
  EXPECT_FALSE(node->value_released());
  tape.backward(loss);
  EXPECT_EQ(max_abs_diff(*node->grad, xt::xarray<double>{1.0, 1.0}), 0.0);
}

// Has a hook note where the gradient reaching `t` is stored, in *seen.
void watch_incoming_array(Tensor<double>& t, const double** seen) {
  t.register_hook([seen](const xt::xarray<double>& g) -> std::optional<xt::xarray<double>> {
    *seen = g.data();
    return std::nullopt;
  });
}

// The gradient flowing into an op is handed to the last input that takes it unchanged, instead
// of a copy: add's b, a reshape's input, dropout's input when nothing is dropped (their gradient
// arrays are the hook-observed one). add's a still gets a copy; a retained gradient is never
// handed on; values are unchanged.
TEST(GradientStorage, TheLastInputTakingTheIncomingGradientTakesItsArray) {
  {
    const auto a = random_tensor({2, 3}, 1), b = random_tensor({2, 3}, 2);
    GradientTape tape;
    auto y = a + b;
    const double* seen = nullptr;
    watch_incoming_array(y, &seen);
    tape.backward(sum(mul(y, 3.0)));
    ASSERT_NE(seen, nullptr);
    EXPECT_EQ(b.grad().data(), seen);
    EXPECT_NE(a.grad().data(), seen);
    EXPECT_EQ(a.grad(), xt::xarray<double>(xt::ones<double>({2, 3}) * 3.0));
    EXPECT_EQ(b.grad(), a.grad());
  }
  // a one-input op passing the gradient through: a's gradient is the array reaching the op.
  const auto expect_input_takes_incoming_array = [&](const auto& op) {
    const auto a = random_tensor({2, 3}, 1);
    GradientTape tape;
    auto out = op(a);
    const double* seen = nullptr;
    watch_incoming_array(out, &seen);
    tape.backward(sum(mul(out, out)));
    ASSERT_NE(seen, nullptr);
    EXPECT_EQ(a.grad().data(), seen);
    EXPECT_EQ(a.grad(), xt::xarray<double>(2.0 * a.value()));
  };
  expect_input_takes_incoming_array([](const Tensor<double>& a) { return reshape(a, {6}); });
  expect_input_takes_incoming_array([](const Tensor<double>& a) {
    Generator gen(1);
    return dropout(a, 0.0, /*training=*/true, gen);
  });
  {
    const auto a = random_tensor({2, 3}, 1), b = random_tensor({2, 3}, 2);
    GradientTape tape;
    auto y = a + b;
    y.retain_grad();
    const double* seen = nullptr;
    watch_incoming_array(y, &seen);
    tape.backward(sum(mul(y, 3.0)));
    EXPECT_NE(b.grad().data(), seen);
    EXPECT_EQ(y.grad(), xt::xarray<double>(xt::ones<double>({2, 3}) * 3.0));
    EXPECT_EQ(b.grad(), y.grad());
  }
  {
    const auto a = random_tensor({2, 3}, 1);
    GradientTape tape;
    tape.backward(sum(mul(a + a, 3.0)));  // both inputs are a: a copy, then the array added in
    EXPECT_EQ(a.grad(), xt::xarray<double>(xt::ones<double>({2, 3}) * 6.0));
  }
}

// An activation's backward multiplies the gradient reaching it by its local derivative, written
// over that gradient's array when the formula holds its only handle: the input's gradient is the
// array that reached the activation. A retained (or lent) gradient keeps its values.
TEST(GradientStorage, AnActivationsBackwardWritesOverTheIncomingGradient) {
  auto a = random_tensor({3, 4}, 1);
  const auto w = random_tensor({3, 4}, 2, false);
  const xt::xarray<double> x = a.value();
  const std::vector<std::pair<const char*, std::function<Tensor<double>(const Tensor<double>&)>>> ops{
      {"relu", [](const Tensor<double>& t) { return relu(t); }},
      {"sigmoid", [](const Tensor<double>& t) { return sigmoid(t); }},
      {"tanh", [](const Tensor<double>& t) { return tanh(t); }},
      {"gelu", [](const Tensor<double>& t) { return gelu(t); }}};
  for (const auto& [name, op] : ops) {
    // The expected gradient, from the same op's backward on a retained output: w * f'(x).
    xt::xarray<double> expected;
    {
      a.zero_grad();
      GradientTape tape;
      auto out = op(a);
      out.retain_grad();
      const double* seen = nullptr;
      watch_incoming_array(out, &seen);
      tape.backward(sum(mul(out, w)));
      EXPECT_NE(a.grad().data(), seen) << name;
      EXPECT_EQ(out.grad(), w.value()) << name << ": the retained gradient was written over";
      expected = a.grad();
    }
    a.zero_grad();
    GradientTape tape;
    auto out = op(a);
    const double* seen = nullptr;
    watch_incoming_array(out, &seen);
    tape.backward(sum(mul(out, w)));
    ASSERT_NE(seen, nullptr);
    EXPECT_EQ(a.grad().data(), seen) << name;
    EXPECT_EQ(a.grad(), expected) << name;
    EXPECT_EQ(a.value(), x) << name;
  }
  a.zero_grad();
  // Through a lent seed: the caller's array is read, never written.
  const xt::xarray<double> seed = w.value();
  GradientTape tape;
  tape.backward(relu(a), seed);
  EXPECT_EQ(seed, w.value());
  EXPECT_EQ(a.grad(), xt::xarray<double>(w.value() * xt::cast<double>(x > 0.0)));
}

// backward(output, seed) lends the seed: the output's op reads the caller's array in place (no
// copy of it), a hook on the output sees that array, and a handle to it kept past backward owns
// a copy.
TEST(SeedLending, TheOutputsOpReadsTheCallersSeedInPlace) {
  const auto x = random_tensor({2, 3}, 1);
  xt::xarray<double> seed = random_tensor({2, 3}, 2, false).value();
  GradientTape tape;
  const double* read = nullptr;
  Tensor<double> kept;
  auto y = custom_op("twice", xt::xarray<double>(2.0 * x.value()), [&, x](const Tensor<double>& g) {
    read = g.value().data();
    kept = g;
    add_gradient(x, mul(g, 2.0));
  }, x);
  const double* hooked = nullptr;
  y.register_hook([&](const xt::xarray<double>& g) -> std::optional<xt::xarray<double>> {
    hooked = g.data();
    return std::nullopt;
  });
  tape.backward(y, seed);
  EXPECT_EQ(read, seed.data());
  EXPECT_EQ(hooked, seed.data());
  EXPECT_EQ(x.grad(), xt::xarray<double>(2.0 * seed));
  const xt::xarray<double> seed_before = seed;
  seed.fill(7.0);
  EXPECT_EQ(kept.value(), seed_before);
}

// An op handing its incoming gradient on unchanged (add's b, reshape, dropout dropping nothing)
// gives a leaf a copy of a lent seed, never the caller's array: the seed stays as it was, also
// when a persistent tape runs backward twice with it and the leaf's gradient accumulates.
TEST(SeedLending, AnInputTakingTheSeedUnchangedGetsACopy) {
  const auto expect_seed_untouched = [](const auto& op, int inputs) {
    const auto a = random_tensor({2, 3}, 1);
    const xt::xarray<double> seed = random_tensor({2, 3}, 3, false).value();
    const xt::xarray<double> seed_before = seed;
    GradientTape tape(/*persistent=*/true);
    const Tensor<double> y = op(a);
    tape.backward(y, seed);
    tape.backward(y, seed);
    EXPECT_EQ(seed, seed_before);
    EXPECT_NE(a.grad().data(), seed.data());
    EXPECT_EQ(a.grad(), xt::xarray<double>(2.0 * inputs * seed_before));
  };
  expect_seed_untouched([](const Tensor<double>& a) { return add(mul(a, 1.0), a); }, 2);
  expect_seed_untouched([](const Tensor<double>& a) { return reshape(a, {2, 3}); }, 1);
  expect_seed_untouched([](const Tensor<double>& a) {
    Generator gen(1);
    return dropout(a, 0.0, /*training=*/true, gen);
  }, 1);
}

// A hook's replacement of a lent seed flows on; the seed is left as it was.
TEST(SeedLending, AHookReplacingTheSeedLeavesItUnchanged) {
  const auto a = random_tensor({2, 3}, 1);
  const xt::xarray<double> seed = random_tensor({2, 3}, 4, false).value();
  const xt::xarray<double> seed_before = seed;
  GradientTape tape;
  auto y = reshape(a, {2, 3});
  y.register_hook([](const xt::xarray<double>& g) -> std::optional<xt::xarray<double>> { return 3.0 * g; });
  tape.backward(y, seed);
  EXPECT_EQ(seed, seed_before);
  EXPECT_EQ(a.grad(), xt::xarray<double>(3.0 * seed));
}

// What grad() shows of a seed is the tensor's own copy: a retained output's and a leaf output's.
// An output whose backward threw before its op read the seed shows none: a walk that throws drops
// the gradients in flight (autograd/core/routing.h).
TEST(SeedLending, GradientsShowingTheSeedAreCopies) {
  const auto x = random_tensor({2, 3}, 1);
  xt::xarray<double> seed = random_tensor({2, 3}, 5, false).value();
  const xt::xarray<double> seed_before = seed;
  const auto expect_copy_of_seed = [&](const Tensor<double>& t) {
    ASSERT_TRUE(t.has_grad());
    EXPECT_NE(t.grad().data(), seed.data());
    EXPECT_EQ(t.grad(), seed_before);
  };
  {
    GradientTape tape;
    auto y = mul(x, 2.0);
    y.retain_grad();
    tape.backward(y, seed);
    expect_copy_of_seed(y);
    EXPECT_EQ(x.grad(), xt::xarray<double>(2.0 * seed_before));
  }
  {
    const auto leaf = random_tensor({2, 3}, 6);
    GradientTape tape;
    tape.backward(leaf, seed);
    expect_copy_of_seed(leaf);
  }
  {
    GradientTape tape;
    auto y = mul(x, 2.0);
    y.mutable_value();  // an in-place write: the walk throws at y's op, before it reads the seed
    EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(y, seed); }, {"modified in place"}));
    EXPECT_FALSE(y.has_grad());
    EXPECT_EQ(seed, seed_before);
  }
}

// A custom op's formula that keeps its gradient and then throws: the kept handle owns a copy of
// the seed, so it stays valid (and unchanged) when the caller's array changes or goes.
TEST(SeedLending, AGradientKeptByAFormulaThatThrowsIsACopy) {
  const auto x = random_tensor({2, 3}, 1);
  auto seed = std::make_unique<xt::xarray<double>>(random_tensor({2, 3}, 8, false).value());
  const xt::xarray<double> seed_before = *seed;
  Tensor<double> kept;
  GradientTape tape;
  const auto y = custom_op("keeps_its_gradient", xt::xarray<double>(x.value()),
                           [&kept](const Tensor<double>& g) {
                             kept = g;
                             throw std::runtime_error("keeps_its_gradient: fails after keeping it");
                           },
                           x);
  EXPECT_THROW(tape.backward(y, *seed), std::runtime_error);
  ASSERT_TRUE(kept.defined());
  EXPECT_NE(kept.value().data(), seed->data());
  seed->fill(99.0);
  seed.reset();
  EXPECT_EQ(kept.value(), seed_before);
}

// A seed passed as an rvalue is moved in: the input an op hands it on to takes its array.
TEST(SeedLending, AMovedSeedIsTakenWithoutACopy) {
  const auto a = random_tensor({2, 3}, 1);
  xt::xarray<double> seed = random_tensor({6}, 7, false).value();
  xt::xarray<double> expected = seed;
  expected.reshape({2, 3});
  const double* storage = seed.data();
  GradientTape tape;
  tape.backward(reshape(a, {6}), std::move(seed));
  EXPECT_EQ(a.grad().data(), storage);
  EXPECT_EQ(a.grad(), expected);
}

}  // namespace
}  // namespace tapegrad
