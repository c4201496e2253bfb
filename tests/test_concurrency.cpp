// Tapes are thread-local: two threads, each training its own model under its own tape, get the
// same bits as running the two trainings one after the other.
#include <thread>

#include "nn/copy_task/copy_task.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

copy_task::Config small_config(std::uint64_t seed) {
  copy_task::Config c;
  c.batch = 16;
  c.batches_per_epoch = 4;
  c.d_model = 16;
  c.d_ff = 32;
  c.heads = 2;
  c.layers = 1;
  c.dropout = 0.1;
  c.seed = seed;
  return c;
}

std::vector<double> train(std::uint64_t seed) {
  copy_task::Trainer trainer(small_config(seed));
  std::vector<double> losses;
  for (int epoch = 0; epoch < 2; ++epoch) trainer.run_epoch([&](std::size_t, double loss) { losses.push_back(loss); });
  return losses;
}

TEST(Concurrency, TwoThreadsTrainingTheirOwnModelsMatchSequentialRuns) {
  const auto sequential_a = train(11);
  const auto sequential_b = train(12);
  std::vector<double> concurrent_a, concurrent_b;
  std::thread ta([&] { concurrent_a = train(11); });
  std::thread tb([&] { concurrent_b = train(12); });
  ta.join();
  tb.join();
  ASSERT_EQ(sequential_a.size(), 8u);
  EXPECT_EQ(concurrent_a, sequential_a);
  EXPECT_EQ(concurrent_b, sequential_b);
  EXPECT_NE(sequential_a, sequential_b);  // the two runs really are different work
}

}  // namespace
}  // namespace tapegrad
