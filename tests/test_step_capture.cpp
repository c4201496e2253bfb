// StepCapture (autograd/memory/step_capture.h): replayed steps give the eager step's results bit for
// bit, whatever the caller keeps, wherever it frees it, and whatever shape comes next.
#include <unistd.h>

#include <fstream>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "autograd/memory/step_arena.h"
#include "autograd/ops/activation.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/reduce.h"
#include "autograd/memory/step_capture.h"
#include "autograd/core/tape.h"
#include "nn/copy_task/copy_task.h"
#include "tests/support/busy_capture.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

// Dropout on: its masks are drawn every step, and a replay must draw the same.
const copy_task::Config kSmallTransformer{
    .seq_len = 7, .batch = 8, .batches_per_epoch = 4, .d_model = 16, .d_ff = 32, .heads = 2, .layers = 1, .dropout = 0.1};

// A copy-task model trained step by step, eagerly or through a capture.
struct Training {
  explicit Training(const copy_task::Config& config) : gen(3), model(copy_task::make_model<float>(config, gen)),
      optimizer(model->named_parameters(), {.lr = 1e-2, .betas = {0.9, 0.98}, .eps = 1e-9}) {}

  // Forward, backward, Adam; returns the loss.
  float step(const copy_task::Batch& batch) {
    Tensor<float> loss;
    {
      GradientTape tape;
      loss = copy_task::batch_loss(*model, batch);
      tape.backward(loss);
    }
    optimizer.step();
    optimizer.zero_grad();
    return loss.item();
  }

  Generator gen;
  std::unique_ptr<nn::transformer::Transformer<float>> model;
  optim::Adam<float> optimizer;
};

void expect_same_parameters(Training& eager, Training& captured) {
  const auto a = eager.model->named_parameters(), b = captured.model->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].second.value() == b[i].second.value()) << a[i].first;
}

TEST(StepCapture, ReplayedTransformerStepsEqualEagerStepsBitForBit) {
  const auto& config = kSmallTransformer;
  Training eager(config), captured(config);
  StepCapture capture;
  Generator data(11);
  for (int step = 0; step < 8; ++step) {
    const auto batch = copy_task::make_batch(copy_task::random_sequences(6, config.seq_len, config.vocab, data));
    const float eager_loss = eager.step(batch);
    const float captured_loss = capture.run([&] { return captured.step(batch); });
    EXPECT_EQ(eager_loss, captured_loss) << "step " << step;
  }
  expect_same_parameters(eager, captured);
  const StepCaptureStats stats = capture.stats();
  // Adam's first step creates its moments, so the second step differs from the first: it
  // diverges, the third records again and the rest replay.
  EXPECT_EQ(stats.recorded_steps, 2u);
  EXPECT_EQ(stats.diverged_steps, 1u);
  EXPECT_EQ(stats.replayed_steps, 5u);
  EXPECT_GT(stats.planned_blocks, 100u);
  EXPECT_GT(stats.arena_bytes, 0u);
  EXPECT_GE(stats.arena_allocations, 5 * stats.planned_blocks);
  EXPECT_FALSE(stats.gave_up);
}

TEST(StepCapture, AnotherBatchSizeRunsOnTheHeapThenIsRecordedAgain) {
  const auto& config = kSmallTransformer;
  Training eager(config), captured(config);
  StepCapture capture;
  Generator data(12);
  for (std::size_t batch_size : {6, 6, 6, 6, 4, 4, 4, 6, 6}) {
    const auto batch = copy_task::make_batch(copy_task::random_sequences(batch_size, config.seq_len, config.vocab, data));
    EXPECT_EQ(eager.step(batch), capture.run([&] { return captured.step(batch); })) << batch_size;
  }
  expect_same_parameters(eager, captured);
  const StepCaptureStats stats = capture.stats();
  EXPECT_EQ(stats.diverged_steps, 3u);  // Adam's first step, then each change of size
  EXPECT_EQ(stats.recorded_steps, 4u);
  EXPECT_EQ(stats.replayed_steps, 2u);
}

TEST(StepCapture, CopyTaskTrainerWithCapturedStepsTrainsTheSameBits) {
  copy_task::Config config = kSmallTransformer;
  copy_task::Trainer eager(config);
  config.capture_steps = true;
  copy_task::Trainer captured(config);
  EXPECT_FALSE(eager.capture_stats().has_value());
  for (int epoch = 0; epoch < 2; ++epoch) EXPECT_EQ(eager.run_epoch().loss, captured.run_epoch().loss) << epoch;
  const auto a = eager.model().named_parameters(), b = captured.model().named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].second.value() == b[i].second.value()) << a[i].first;
  ASSERT_TRUE(captured.capture_stats().has_value());
  EXPECT_EQ(captured.capture_stats()->replayed_steps, 5u);  // 8 steps: recorded, diverged (Adam), recorded, 5 replays
}

// A small step on doubles: y = sum(tanh(x w) * x w), its gradient into w; `keep` sees each
// intermediate array the step makes.
struct SmallStep {
  Tensor<double> x = Tensor<double>(xt::xarray<double>{{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}});
  Tensor<double> w = Tensor<double>(xt::xarray<double>{{0.1, 0.2}, {-0.3, 0.4}, {0.5, -0.6}}, true);

  Tensor<double> run(const std::function<void(const Tensor<double>&)>& keep = {}) {
    GradientTape tape;
    const auto xw = matmul(x, w);
    const auto t = tanh(xw);
    if (keep) keep(t);
    const auto y = sum(t * xw);
    tape.backward(y);
    w.zero_grad();
    return y;
  }
};

TEST(StepCapture, AnArrayKeptFromAReplayKeepsItsBytes) {
  SmallStep step;
  StepCapture capture;
  const xt::xarray<double> expected = step.run().value();
  for (int i = 0; i < 3; ++i) capture.run([&] { step.run(); });
  ASSERT_EQ(capture.stats().replayed_steps, 2u);
  Tensor<double> kept;
  capture.run([&] { step.run([&](const Tensor<double>& t) { kept = t; }); });  // outlives its step
  const xt::xarray<double> kept_value = kept.value();
  for (int i = 0; i < 4; ++i) {
    const Tensor<double> y = capture.run([&] { return step.run(); });
    EXPECT_TRUE(y.value() == expected) << i;
    EXPECT_TRUE(kept.value() == kept_value) << "a later replay overwrote the array kept from an earlier one, step " << i;
  }
  const StepCaptureStats stats = capture.stats();
  EXPECT_EQ(stats.diverged_steps, 0u);
  EXPECT_GT(stats.heap_allocations, 0u);  // the kept array's planned block went to the heap
}

TEST(StepCapture, AnArrayOutlivesItsCaptureAndIsFreedOnAnotherThread) {
  SmallStep step;
  Tensor<double> kept;
  xt::xarray<double> kept_value;
  {
    StepCapture capture;
    for (int i = 0; i < 3; ++i) capture.run([&] { step.run(); });
    capture.run([&] { step.run([&](const Tensor<double>& t) { kept = t; }); });
    kept_value = kept.value();
    EXPECT_GT(capture.stats().arena_allocations, 0u);
  }
  EXPECT_TRUE(kept.value() == kept_value);
  std::thread([moved = std::move(kept)]() mutable { moved = Tensor<double>(); }).join();
  // The arena is unmapped now; new arrays still work, captured or not.
  StepCapture again;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(again.run([&] { return step.run(); }).value() == step.run().value());
}

// The process's resident set, from /proc/self/statm (pages).
long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// A large array a step keeps (Adam's moments made in the first step, the attention map a module
// keeps until the next step) is mapped on its own, recorded or replayed: freeing it gives its
// pages back at once. On the heap, with tapegrad's malloc policy (no mmap, trim threshold
// 1 GiB), they would stay resident, and the holes it left among the step's freed temporaries
// would be touched again by later small allocations.
TEST(StepCapture, ALargeArrayKeptFromAStepGoesBackToTheSystemWhenFreed) {
  constexpr std::size_t kFloats = std::size_t{16} << 20;  // 64 MiB
  StepCapture capture;
  for (int i = 0; i < 3; ++i) {
    xt::xarray<float> kept;
    capture.run([&] {
      const xt::xarray<float> temporary = xt::ones<float>({std::size_t{1} << 16});
      kept = xt::xarray<float>::from_shape({kFloats});
      kept.fill(temporary(i));
    });
    EXPECT_EQ(kept(kFloats - 1), 1.0f);
    const long with = resident_kib();
    { const xt::xarray<float> freed = std::move(kept); }
    const long without = resident_kib();
    EXPECT_GT(with - without, 56 << 10) << "step " << i << ": " << with << " KiB resident with the array, " << without
                                        << " KiB after freeing it";
  }
  EXPECT_EQ(capture.stats().recorded_steps, 1u);
  EXPECT_EQ(capture.stats().replayed_steps, 2u);
}

// An array remade every step and kept until the next (a module's attention map): the mapping the
// previous step's array freed serves the next one, so that steady replays map nothing and fault no
// page in. Mapping each afresh cost the paper-size step 684 page faults (bench/RESULTS.md, issue 40).
TEST(StepCapture, AnArrayRemadeEveryStepReusesTheMappingItsPredecessorFreed) {
  constexpr std::size_t kFloats = std::size_t{1} << 20;  // 4 MiB: mapped on its own off the plan
  StepCapture capture;
  xt::xarray<float> kept;
  const auto step = [&](int i) {
    const xt::xarray<float> temporary = xt::full_like(xt::xarray<float>::from_shape({std::size_t{1} << 16}), float(i));
    kept = xt::xarray<float>::from_shape({kFloats});  // frees the previous step's array, inside this step
    kept.fill(temporary(0) + 1.0f);
  };
  for (int i = 0; i < 3; ++i) capture.run([&] { step(i); });  // a recording, then two replays
  const std::size_t made = detail::arena_mappings_made();
  for (int i = 3; i < 8; ++i) {
    capture.run([&] { step(i); });
    EXPECT_EQ(kept(0), float(i + 1));
    EXPECT_EQ(kept(kFloats - 1), float(i + 1));
  }
  EXPECT_EQ(detail::arena_mappings_made(), made) << "steady replays mapped arrays afresh";
  EXPECT_EQ(capture.stats().replayed_steps, 7u);
}

// A mapping kept for the next step that the next step does not take goes back at that step's end;
// the capture's end gives back any still kept.
TEST(StepCapture, AKeptMappingNoStepTakesGoesBackAfterTheNextStep) {
  constexpr std::size_t kFloats = std::size_t{16} << 20;  // 64 MiB
  xt::xarray<float> kept;
  const auto make = [&] {
    const xt::xarray<float> temporary = xt::ones<float>({std::size_t{1} << 16});
    kept = xt::xarray<float>::from_shape({kFloats});
    kept.fill(temporary(0));
  };
  const auto free_kept = [&] { kept = xt::xarray<float>(); };
  detail::release_recycled_mappings();  // whatever earlier tests' captures left kept
  const std::size_t mappings_before = detail::arena_mappings();
  {
    StepCapture capture;
    capture.run(make);  // recorded
    free_kept();        // outside a step: unmapped at once
    capture.run(make);  // replayed
    const long with = resident_kib();
    capture.run(free_kept);  // freed inside a replay: kept mapped
    EXPECT_LT(with - resident_kib(), 8 << 10) << "freed inside a replay, its pages went back before the next step";
    capture.run([] {});  // a whole step without taking it
    EXPECT_GT(with - resident_kib(), 56 << 10) << "the kept mapping outlived the step after the one that freed it";
  }
  {
    StepCapture capture;
    capture.run(make);
    free_kept();
    capture.run(make);
    capture.run(free_kept);
  }
  EXPECT_EQ(detail::arena_mappings(), mappings_before) << "the capture's end left a kept mapping behind";
}

// A capture that gives up ends no more steps: a mapping its last replay kept goes back then.
TEST(StepCapture, AKeptMappingGoesBackWhenTheCaptureGivesUp) {
  detail::release_recycled_mappings();  // whatever earlier tests' captures left kept
  const std::size_t mappings_before = detail::arena_mappings();
  xt::xarray<float> kept;
  StepCapture capture;
  for (std::size_t n = 1; !capture.stats().gave_up; ++n) {
    ASSERT_LT(n, 20u);
    capture.run([&] {
      const xt::xarray<float> temporary = xt::ones<float>({n});  // another size each step: diverges
      kept = xt::xarray<float>::from_shape({std::size_t{16} << 20});
      kept.fill(temporary(0));
    });
  }
  kept = xt::xarray<float>();  // outside a step: unmapped at once
  EXPECT_EQ(detail::arena_mappings(), mappings_before) << "a mapping kept by the last replay outlived giving up";
}

// A hostile step keeping more large arrays than the mappings allowed: the rest come from the heap,
// and the process keeps kernel mappings for everyone else (each own mapping costs two).
TEST(StepCapture, ArraysBeyondTheMappingLimitComeFromTheHeap) {
  const std::size_t floats = (std::size_t{128} << 10) / sizeof(float);  // 128 KiB: mapped on its own
  const std::size_t count = detail::kMaxArenaMappings + 3000;
  std::vector<xt::xarray<float>> kept;
  kept.reserve(count);
  StepCapture capture;
  capture.run([&] {
    for (std::size_t i = 0; i < count; ++i) kept.push_back(xt::xarray<float>::from_shape({floats}));
  });
  EXPECT_LE(detail::arena_mappings(), detail::kMaxArenaMappings);
  for (std::size_t i = 0; i < count; ++i) {
    kept[i](0) = static_cast<float>(i);
    kept[i](floats - 1) = static_cast<float>(i);
  }
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(kept[i](0) + kept[i](floats - 1), 2.0f * static_cast<float>(i)) << i;
  kept.clear();
  EXPECT_EQ(detail::arena_mappings(), 0u);
}

// A size within 64 bytes of 2^64, eagerly and inside a captured step: bad_alloc, not a block of a
// few bytes handed out for it (libstdc++'s aligned operator new rounded it up to 0 and returned
// one; a mapping's header would wrap it the same way).
TEST(StepCapture, AnArrayTooLargeForMemoryThrowsBadAlloc) {
  const std::size_t floats = static_cast<std::size_t>(-1) / sizeof(float);
  EXPECT_THROW(xt::xarray<float>::from_shape({floats}), std::bad_alloc);
  StepCapture capture;
  EXPECT_THROW(capture.run([&] { return xt::xarray<float>::from_shape({floats}); }), std::bad_alloc);
}

TEST(StepCapture, RunInsideRunThrowsAndTheOuterStepStillCompletes) {
  SmallStep step;
  StepCapture outer, inner;
  const Tensor<double> y = outer.run([&] {
    EXPECT_TRUE(throws_with<TapeError>([&] { inner.run([&] { step.run(); }); }, {"StepCapture::run", "already running"}));
    return step.run();
  });
  EXPECT_TRUE(y.value() == step.run().value());
}

TEST(StepCapture, ACaptureRunningOnAnotherThreadThrows) {
  StepCapture capture;
  testing::while_capture_runs_on_another_thread(capture, [&] {
    EXPECT_TRUE(throws_with<TapeError>([&] { capture.run([] {}); }, {"StepCapture::run", "another thread"}));
  });
  SmallStep step;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(capture.run([&] { return step.run(); }).value() == step.run().value());
}

TEST(StepCapture, AStepThatThrowsIsRethrownAndTheNextIsRecordedAgain) {
  SmallStep step;
  StepCapture capture;
  capture.run([&] { step.run(); });
  EXPECT_THROW(capture.run([&] {
    step.run();
    throw std::runtime_error("user error");
  }), std::runtime_error);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(capture.run([&] { return step.run(); }).value() == step.run().value());
  const StepCaptureStats stats = capture.stats();
  EXPECT_EQ(stats.diverged_steps, 1u);
  EXPECT_EQ(stats.recorded_steps, 2u);
  EXPECT_EQ(stats.replayed_steps, 2u);
}

TEST(StepCapture, StepsThatNeverRepeatMakeItGiveUp) {
  StepCapture capture;
  for (std::size_t n = 1; n < 10; ++n) {
    const auto x = Tensor<double>(xt::ones<double>({n}), true);
    const Tensor<double> y = capture.run([&] {
      GradientTape tape;
      auto s = sum(x * x);
      tape.backward(s);
      return s;
    });
    EXPECT_EQ(y.item(), static_cast<double>(n));
    EXPECT_TRUE(x.grad() == 2.0 * xt::ones<double>({n}));
  }
  const StepCaptureStats stats = capture.stats();
  EXPECT_TRUE(stats.gave_up);
  EXPECT_EQ(stats.diverged_steps, StepCapture::kMaxConsecutiveRerecords + 1);
}

}  // namespace
}  // namespace tapegrad
