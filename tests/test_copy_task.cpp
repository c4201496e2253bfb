#include "autograd/kernels/parallel.h"
#include "examples/copy_task/copy_task.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

copy_task::Config tiny_config() {
  copy_task::Config c;
  c.batch = 40;
  c.batches_per_epoch = 10;
  c.d_model = 32;
  c.d_ff = 64;
  c.heads = 4;
  c.layers = 2;
  c.warmup = 100;
  c.seed = 3;
  return c;
}

std::vector<double> epoch_losses(const copy_task::Config& config, std::size_t epochs) {
  copy_task::Trainer trainer(config);
  std::vector<double> losses;
  for (std::size_t e = 0; e < epochs; ++e) {
    trainer.run_epoch([&](std::size_t, double loss) { losses.push_back(loss); });
  }
  return losses;
}

TEST(CopyTask, BatchesShiftTargetsAndMaskPaddingAndTheFuture) {
  Generator gen(0);
  const auto data = copy_task::random_sequences(3, 5, 11, gen);
  for (std::size_t b = 0; b < 3; ++b) {
    EXPECT_EQ(data(b, 0), copy_task::kStart);
    for (std::size_t s = 1; s < 5; ++s) {
      EXPECT_GE(data(b, s), 2);
      EXPECT_LT(data(b, s), 11);
    }
  }
  const auto batch = copy_task::make_batch(data);
  EXPECT_EQ(batch.tgt_in(1, 2), data(1, 2));
  EXPECT_EQ(batch.tgt_out(1, 2), data(1, 3));
  EXPECT_EQ(batch.ntokens, 3u * 4);
  EXPECT_TRUE(batch.tgt_mask(0, 1, 0));
  EXPECT_FALSE(batch.tgt_mask(0, 1, 2));  // query 1 may not see key 2
}

TEST(CopyTask, LearnsToCopyWithinABoundedNumberOfSteps) {
  // The README's default configuration (batch 80, 20 steps an epoch) with a fixed seed; it copies
  // perfectly after about 400 steps, and gets at most 800.
  copy_task::Config config;
  config.seed = 3;
  copy_task::Trainer trainer(config);
  double accuracy = 0.0;
  std::size_t epochs = 0;
  while (accuracy < 1.0 && epochs < 40) {
    for (int i = 0; i < 5; ++i, ++epochs) trainer.run_epoch();
    accuracy = trainer.exact_match_accuracy(100);
  }
  EXPECT_EQ(accuracy, 1.0) << "after " << epochs * config.batches_per_epoch << " steps";
}

TEST(CopyTask, SameSeedGivesBitIdenticalLosses) {
  const auto first = epoch_losses(tiny_config(), 2);
  const auto second = epoch_losses(tiny_config(), 2);
  ASSERT_EQ(first.size(), 20u);
  EXPECT_EQ(first, second);
  auto other = tiny_config();
  other.seed = 4;
  EXPECT_NE(epoch_losses(other, 1), std::vector<double>(first.begin(), first.begin() + 10));
}

TEST(CopyTask, LossesDoNotDependOnTheThreadCount) {
  auto config = tiny_config();
  config.dropout = 0.1;  // dropout masks must not depend on the thread count either
  set_num_threads(1);
  const auto one = epoch_losses(config, 1);
  set_num_threads(2);
  const auto two = epoch_losses(config, 1);
  set_num_threads(0);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace tapegrad
