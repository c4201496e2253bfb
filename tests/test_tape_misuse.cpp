// Tape misuse: each test is a way tapegrad used to return a silently wrong gradient or
// crash. In-place edits after the forward, tensors outliving their tape, a tape after a backward
// that threw, closures that clear their own gradient, and threads sharing a leaf, a generator or a
// tape. What used to crash runs in a death-test child, so a regression fails one test.
#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "autograd/core/custom_op.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "optim/sgd.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

Tensor<double> vec(std::initializer_list<double> v, bool requires_grad = true) {
  return Tensor<double>(xt::xarray<double>(v), requires_grad);
}

// Runs body in a child process (GoogleTest death test): passes when body returns true, fails on
// false and on any crash, without taking the test binary down.
#define EXPECT_IN_CHILD(body)                                                                  \
  do {                                                                                         \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                                            \
    EXPECT_EXIT(std::_Exit((body) ? 0 : 1), ::testing::ExitedWithCode(0), "");                 \
  } while (false)

// ---- in-place edits after the forward ----------------------------------------------------------

TEST(TrustInPlace, EditOfASavedInputAfterTheForwardThrowsNamingTensorOpAndCallSite) {
  auto x = vec({1.0, 2.0, 3.0}).set_name("x");
  GradientTape tape;
  const auto loss = sum(x * x);  // dL/dx = 2x = [2, 4, 6] at forward time
  x.mutable_value()(0) = 100.0;  // used to make backward report 200
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(loss); },
                                     {"'x'", "modified in place", "mul", "test_tape_misuse.cpp", "version 0"}));
}

TEST(TrustInPlace, EditOfAnOpOutputThrows) {
  auto x = vec({0.5, 1.0});
  GradientTape tape;
  auto y = exp(x);  // exp's backward reads its output
  const auto loss = sum(y);
  y.mutable_value()(1) = 0.0;
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(loss); }, {"output of exp", "modified in place"}));
}

TEST(TrustInPlace, OptimiserStepBeforeASecondBackwardOnAPersistentTapeThrows) {
  auto w = vec({1.0, -2.0}).set_name("w");
  optim::SGD<double> sgd(optim::NamedParameters<double>{{"w", w}}, optim::SGDOptions{.lr = 0.1});
  GradientTape tape(/*persistent=*/true);
  const auto loss = sum(w * w);
  tape.backward(loss);
  sgd.step();  // writes w in place
  EXPECT_TRUE(throws_with<TapeError>([&] { tape.backward(loss); }, {"'w'", "modified in place", "mul"}));
}

TEST(TrustInPlace, EditsBeforeTheForwardAndZeroGradAreNotWrites) {
  auto x = vec({1.0, 2.0});
  x.mutable_value()(0) = 3.0;
  const auto before = x.version();
  EXPECT_EQ(before, 1u);
  GradientTape tape;
  const auto loss = sum(x * x);
  x.zero_grad();
  EXPECT_EQ(x.version(), before);
  tape.backward(loss);
  EXPECT_DOUBLE_EQ(x.grad()(0), 6.0);
  EXPECT_DOUBLE_EQ(x.grad()(1), 4.0);
}

// ---- tensors outliving their tape -----------------------------------------------------------

TEST(TrustLifetimes, IntermediateFromAnEndedTapeUsedUnderANewTapeThrows) {
  auto w = vec({2.0}).set_name("w");
  Tensor<double> h;
  {
    GradientTape first;
    h = w * w * 3.0;  // dh/dw = 6w = 12
  }
  GradientTape second;
  const auto loss = sum(h + w);  // used to give dL/dw = 1 where it is 13
  EXPECT_TRUE(throws_with<TapeError>([&] { second.backward(loss); }, {"mul_scalar", "not on this tape", "detach()"}));
}

TEST(TrustLifetimes, OpsWithNoTapeAliveAreConstants) {
  auto w = vec({2.0});
  const auto h = w * w * 3.0;  // no tape: a constant, by design (TensorFlow's rule)
  EXPECT_FALSE(h.requires_grad());
  GradientTape tape;
  tape.backward(sum(h + w));
  EXPECT_DOUBLE_EQ(w.grad()(0), 1.0);
}

TEST(TrustLifetimes, DetachedIntermediateIsAConstantUnderANewTape) {
  auto w = vec({2.0});
  Tensor<double> h;
  {
    GradientTape first;
    h = (w * w).detach();
  }
  GradientTape second;
  second.backward(sum(h * w));
  EXPECT_DOUBLE_EQ(w.grad()(0), 4.0);
}

// ---- the tape after a backward that threw ---------------------------------------------------

Tensor<double> throwing_op(const Tensor<double>& x) {
  return custom_op(
      "throwing_op", xt::xarray<double>(x.value()),
      [](const xt::xarray<double>&, const xt::xarray<double>&) { throw ValueError("throwing_op: backward failed"); }, x);
}

TEST(TrustTapeState, BackwardAfterABackwardThatThrewIsAClearError) {
  EXPECT_IN_CHILD(([] {
    auto x = vec({1.0, 2.0});
    GradientTape tape(/*persistent=*/true);
    const auto loss = sum(throwing_op(x) * 2.0);
    if (!throws_with<ValueError>([&] { tape.backward(loss); }, {"backward failed"})) return false;
    return static_cast<bool>(throws_with<TapeError>([&] { tape.backward(loss); }, {"earlier backward on this tape threw"}));
  }()));
}

TEST(TrustTapeState, ClearMakesAPersistentTapeUsableAndReleasesItsEntries) {
  auto x = vec({3.0});
  GradientTape tape(/*persistent=*/true);
  for (int step = 0; step < 3; ++step) {
    x.zero_grad();
    tape.backward(sum(x * x * x));
    EXPECT_DOUBLE_EQ(x.grad()(0), 27.0);
    EXPECT_EQ(tape.size(), 3u);  // mul, mul, sum
    tape.clear();
    EXPECT_EQ(tape.size(), 0u);
  }
}

TEST(TrustTapeState, ClosureThatClearsItsOwnOutputGradientStillReadsAValidGradient) {
  EXPECT_IN_CHILD(([] {
    auto x = vec({1.0, 2.0, 3.0});
    GradientTape tape;
    auto output = std::make_shared<Tensor<double>>();
    *output = custom_op(
        "clears_own_grad", xt::xarray<double>(x.value() * 2.0),
        [x, output](const xt::xarray<double>& grad, const xt::xarray<double>&) {
          output->zero_grad();  // used to free `grad` under the closure's feet
          add_gradient(x, xt::xarray<double>(grad * 2.0));
        },
        x);
    tape.backward(sum(*output * 5.0));
    output.reset();
    return x.grad() == xt::xarray<double>({10.0, 10.0, 10.0});
  }()));
}

// ---- threads ---------------------------------------------------------------------------------

TEST(TrustThreads, BackwardFromTwoThreadsIntoOneSharedLeafLosesNoUpdate) {
  auto w = Tensor<double>::ones({64}, true);
  constexpr int kPerThread = 300;
  const auto train = [&] {
    for (int i = 0; i < kPerThread; ++i) {
      GradientTape tape;
      tape.backward(sum(w * 1.0));  // adds exactly 1 to every element
    }
  };
  std::thread a(train), b(train);
  a.join();
  b.join();
  EXPECT_EQ(w.grad(), xt::xarray<double>(xt::full_like(w.value(), 2.0 * kPerThread)));
}

TEST(TrustThreads, ZeroGradBesideTwoBackwardThreadsNeverCorruptsTheGradient) {
  EXPECT_IN_CHILD(([] {
    auto w = Tensor<double>::ones({4096}, true);
    std::atomic<bool> done{false};
    const auto train = [&] {
      for (int i = 0; i < 200; ++i) {
        GradientTape tape;
        tape.backward(sum(w * 1.0));
      }
    };
    std::thread a(train), b(train);
    std::thread zero([&] {
      while (!done.load()) w.zero_grad();
    });
    a.join();
    b.join();
    done = true;
    zero.join();
    // Whatever survived the races is a whole number of contributions, the same in every element.
    if (!w.has_grad()) return true;
    const auto& g = w.grad();
    return std::all_of(g.begin(), g.end(), [&](double v) { return v == g(0) && v >= 1.0 && v <= 400.0; });
  }()));
}

TEST(TrustThreads, AGeneratorSharedByTwoThreadsNeverRepeatsADraw) {
  constexpr std::size_t kDraws = 20000;
  Generator sequential(7);
  std::set<std::uint64_t> expected;
  for (std::size_t i = 0; i < 2 * kDraws; ++i) expected.insert(sequential.next_u64());

  Generator shared(7);
  std::vector<std::uint64_t> a(kDraws), b(kDraws);
  std::thread ta([&] { for (auto& v : a) v = shared.next_u64(); });
  std::thread tb([&] { for (auto& v : b) v = shared.next_u64(); });
  ta.join();
  tb.join();
  std::set<std::uint64_t> drawn(a.begin(), a.end());
  drawn.insert(b.begin(), b.end());
  EXPECT_EQ(drawn.size(), 2 * kDraws);  // used to repeat draws
  EXPECT_EQ(drawn, expected);           // exactly the numbers one thread would have drawn
  EXPECT_EQ(shared.offset(), sequential.offset());
}

TEST(TrustThreads, ATapeDestroyedOnAnotherThreadStopsRecordingSafely) {
  EXPECT_IN_CHILD(([] {
    auto x = vec({2.0});
    auto tape = std::make_unique<GradientTape>();
    std::thread([&] { tape.reset(); }).join();  // used to leave this thread's list pointing at freed memory
    const auto y = x * x;                         // so this recorded into it
    GradientTape fresh;
    const auto z = x * x * x;
    fresh.backward(sum(z));
    return !y.requires_grad() && x.grad()(0) == 12.0;
  }()));
}

TEST(TrustThreads, BackwardOnAnotherThreadThanTheTapesIsAClearError) {
  auto x = vec({2.0});
  GradientTape tape;
  const auto loss = sum(x * x);
  bool refused = false;
  std::thread([&] { refused = throws_with<TapeError>([&] { tape.backward(loss); }, {"thread that created it"}); }).join();
  EXPECT_TRUE(refused);
  tape.backward(loss);  // the owner still can
  EXPECT_DOUBLE_EQ(x.grad()(0), 4.0);
}

}  // namespace
}  // namespace tapegrad
