#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "autograd/ops/functional.h"
#include "autograd/kernels/parallel.h"
#include "nn/copy_task/copy_task.h"
#include "nn/copy_task/model_size.h"
#include "nn/functional_call.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

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
  EXPECT_TRUE(batch.tgt_mask.may_attend()(0, 1, 0));
  EXPECT_FALSE(batch.tgt_mask.may_attend()(0, 1, 2));  // query 1 may not see key 2
}

// The copy task's default configuration (batch 80, 20 steps an epoch; docs/building.md), seeded, trained
// until it copies 100 fresh sequences perfectly (at most 800 steps); its accuracy then.
double accuracy_within_800_steps(MatmulPrecision precision) {
  copy_task::Config config;
  config.seed = 3;
  config.matmul_precision = precision;
  copy_task::Trainer trainer(config);
  double accuracy = 0.0;
  std::size_t epochs = 0;
  while (accuracy < 1.0 && epochs < 40) {
    for (int i = 0; i < 5; ++i, ++epochs) trainer.run_epoch();
    accuracy = trainer.exact_match_accuracy(100);
  }
  return accuracy;
}

// It copies perfectly after about 400 steps.
// Every token after the start symbol changes, to each of the other tokens about equally often.
TEST(CopyTask, CorruptedSequencesChangeEveryTokenButTheStartUniformly) {
  Generator gen(8);
  const std::size_t vocab = 6;
  const IndexArray data = copy_task::random_sequences(400, 6, vocab, gen);
  const IndexArray corrupted = copy_task::corrupt_sequences(data, vocab, gen);
  ASSERT_EQ(corrupted.shape(), data.shape());
  std::vector<std::vector<int>> counts(vocab, std::vector<int>(vocab, 0));
  for (std::size_t b = 0; b < 400; ++b) {
    EXPECT_EQ(corrupted(b, 0), copy_task::kStart);
    for (std::size_t s = 1; s < 6; ++s) {
      ASSERT_NE(corrupted(b, s), data(b, s));
      ASSERT_GE(corrupted(b, s), 2);
      ASSERT_LT(corrupted(b, s), static_cast<Index>(vocab));
      ++counts[data(b, s)][corrupted(b, s)];
    }
  }
  // 2000 draws over 4 tokens, each to 3 others: about 167 per pair; 4 standard deviations is 48.
  for (std::size_t from = 2; from < vocab; ++from)
    for (std::size_t to = 2; to < vocab; ++to)
      if (from != to) {
        EXPECT_NEAR(counts[from][to], 2000.0 / 12, 48) << from << " -> " << to;
      }
  EXPECT_TRUE(throws_with<ValueError>([&] { copy_task::corrupt_sequences(data, 3, gen); },
                                      {"corrupt_sequences", "vocab 3"}));
  IndexArray bad = data;
  bad(1, 2) = 9;
  EXPECT_TRUE(throws_with<ValueError>([&] { copy_task::corrupt_sequences(bad, vocab, gen); },
                                      {"corrupt_sequences", "token 9 at [1, 2]", "[2, 6)"}));
}

TEST(CopyTask, LearnsToCopyWithinABoundedNumberOfSteps) {
  EXPECT_EQ(accuracy_within_800_steps(MatmulPrecision::kFloat32), 1.0);
}

// copy_task --bf16 (bf16 mode): products in bf16, and it still learns to copy.
TEST(CopyTask, LearnsToCopyWithBf16Products) {
  EXPECT_EQ(accuracy_within_800_steps(MatmulPrecision::kBfloat16), 1.0);
  auto bf16 = tiny_config();
  bf16.matmul_precision = MatmulPrecision::kBfloat16;
  EXPECT_NE(epoch_losses(bf16, 1), epoch_losses(tiny_config(), 1));  // the mode reaches the step's products
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
  const testing_support::ThreadCountTest thread_count_test;
  for (const MatmulPrecision precision : {MatmulPrecision::kFloat32, MatmulPrecision::kBfloat16}) {
    auto config = tiny_config();
    config.dropout = 0.1;  // dropout masks must not depend on the thread count either
    config.matmul_precision = precision;
    set_num_threads(1);
    const auto one = epoch_losses(config, 1);
    set_num_threads(2);
    const auto two = epoch_losses(config, 1);
    EXPECT_EQ(one, two);
  }
}

// Every kernel runs the same parts whether it spreads them over threads or not (base/spread.h),
// so the measured rule, which may pick either way at any call, cannot change a bit. The model is
// large enough that every kind of partition has several parts: products of 42 M multiply-adds,
// [640, 512] activations, dropout masks of 327,680 draws.
TEST(CopyTask, LossesDoNotDependOnHowWorkIsSpread) {
  const testing_support::ThreadCountTest thread_count_test;
  set_num_threads(2);
  auto config = tiny_config();
  config.batch = 64;
  config.batches_per_epoch = 3;
  config.d_model = 128;
  config.d_ff = 512;
  config.dropout = 0.1;
  std::vector<std::vector<double>> losses;
  for (const SpreadPolicy policy :
       {SpreadPolicy::kAlwaysSpread, SpreadPolicy::kNeverSpread, SpreadPolicy::kMeasured}) {
    set_spread_policy(policy);
    losses.push_back(epoch_losses(config, 1));
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(losses[0], losses[2]);
}

TEST(CopyTask, ParameterCountComputedFromTheSizesMatchesTheBuiltModel) {
  std::vector<copy_task::Config> configs(5, tiny_config());
  configs[1].layers = 1;
  configs[2].d_ff = 7;
  configs[3].heads = 1;
  configs[4].d_model = 12;
  configs[4].heads = 3;
  configs[4].layers = 3;
  for (const auto& config : configs) {
    EXPECT_EQ(copy_task::parameter_count(config),
              static_cast<double>(copy_task::Trainer(config).model().num_parameters()))
        << "N=" << config.layers << " d_model " << config.d_model << " d_ff " << config.d_ff;
  }
}

TEST(CopyTask, RunTooLargeForMemoryIsRefusedNamingItsSizes) {
  // The default model (docs/building.md) has 43,243 parameters: 16 bytes each with gradient and Adam state.
  // Its batch of 80 sequences keeps, per layer and sequence, the FFN hidden activation of the
  // encoder (10 x 64) and decoder (9 x 64) and 4 heads' attention maps (10 x 10, 9 x 9, 9 x 10):
  // 2300 floats, times 2 layers.
  const copy_task::Config config;
  const double state = 43243.0 * 16, activations = 4.0 * 80 * 2 * 2300;
  EXPECT_EQ(copy_task::training_state_bytes(config), state);
  EXPECT_EQ(copy_task::activation_bytes_lower_bound(config), activations);
  EXPECT_NO_THROW(copy_task::check_fits_in_memory(config, state + activations));
  EXPECT_TRUE(testing::throws_with<ValueError>(
      [&] { copy_task::check_fits_in_memory(config, state + activations - 1); },
      {"a model of 43,243 parameters (N=2, d_model 32, d_ff 64, heads 4) on batches of 80 sequences of 10 tokens",
       "needs at least 2.2 MB (691.9 kB for the parameters", "1.5 MB for one batch's activations",
       "this machine has 2.2 MB of memory"}));
}

TEST(CopyTask, NonFiniteLossStopsTrainingBeforeTheUpdateNamingTheStep) {
  auto config = tiny_config();
  config.lr_factor = 1e30;  // the first update sends the weights to ~1e29, the next forward overflows
  config.warmup = 1;
  config.batches_per_epoch = 1;
  copy_task::Trainer trainer(config);
  std::size_t epochs = 0;
  std::string message;
  try {
    for (; epochs < 10; ++epochs) trainer.run_epoch();
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  ASSERT_LT(epochs, 10u) << "ten epochs at a Noam factor of 1e30 without a NaN or infinite loss";
  const std::string step = std::to_string(epochs + 1);
  EXPECT_NE(message.find("the training loss is"), std::string::npos) << message;
  EXPECT_NE(message.find("at step " + step + " (epoch " + step + ", batch 1 of 1)"), std::string::npos) << message;
  EXPECT_EQ(trainer.steps(), epochs);
  for (const auto& [name, p] : trainer.model().named_parameters()) {
    for (const float v : p.value()) ASSERT_TRUE(std::isfinite(v)) << name << " was updated with the bad loss";
  }
}

TEST(CopyTask, CheckpointOfAnotherDepthNamesTheMismatchedParametersFirst) {
  const auto path = std::filesystem::temp_directory_path() / ("copy_task_depth_" + std::to_string(::getpid()));
  auto one_layer = tiny_config();
  one_layer.layers = 1;
  copy_task::Trainer(one_layer).save(path);
  copy_task::Trainer two_layers(tiny_config());
  std::string message;
  try {
    two_layers.load(path);
  } catch (const std::exception& e) {
    message = e.what();
  }
  std::filesystem::remove(path);
  const auto parameters = message.find("missing parameters [decoder.decoder_layers.1.");
  ASSERT_NE(parameters, std::string::npos) << message;
  EXPECT_NE(message.find("encoder.encoder_layers.1."), std::string::npos) << message;
  EXPECT_LT(parameters, message.find("generator states")) << message;
}

// The copy task's loss, differentiated twice: hessian_vector_product against central differences
// of the gradient, (grad L(theta + h v) - grad L(theta - h v)) / 2h, along a random direction v
// over every parameter. The Trainer trains in float only, so the same model (make_model) and loss
// (batch_loss) are built in double here. Dropout is the copy task's default, p = 0, so the loss is
// a deterministic function of the parameters; the data has no padding, so the padding row of the
// embeddings (zero gradient by definition) is not read and the gradient map is the loss's.
TEST(CopyTask, HessianVectorProductOfTheLossMatchesDifferencesOfItsGradient) {
  copy_task::Config config;
  config.vocab = 7;
  config.seq_len = 5;
  config.d_model = 8;
  config.d_ff = 16;
  config.heads = 2;
  config.layers = 2;
  ASSERT_EQ(config.dropout, 0.0);
  Generator init(41), data(42);
  const auto model = copy_task::make_model<double>(config, init);
  const copy_task::Batch batch =
      copy_task::make_batch(copy_task::random_sequences(3, config.seq_len, config.vocab, data));
  std::vector<std::string> names;
  std::vector<Tensor<double>> theta;  // handles: moving one moves the model
  for (const auto& [name, p] : model->named_parameters()) {
    names.push_back(name);
    theta.push_back(p);
  }
  // The loss as a function of the parameters it is given (nn/functional_call.h).
  const TensorFunction<double> loss = [&](const std::vector<Tensor<double>>& p) {
    const nn::ParameterSubstitution<double> substituted(*model, names, p);
    return copy_task::batch_loss(*model, batch);
  };
  std::vector<Tensor<double>> v;
  for (const auto& p : theta) v.push_back(Tensor<double>::uniform(p.shape(), data, -1.0, 1.0));

  const auto hv = hessian_vector_product(loss, theta, v);
  // The gradient at theta + step v (the parameters are moved in place and put back).
  const auto gradient_at = [&](double step) {
    std::vector<xt::xarray<double>> saved;
    for (std::size_t i = 0; i < theta.size(); ++i) {
      saved.push_back(theta[i].value());
      theta[i].mutable_value() = saved[i] + step * v[i].value();
    }
    const auto g = grad(loss, theta);
    for (std::size_t i = 0; i < theta.size(); ++i) theta[i].mutable_value() = saved[i];
    return g;
  };
  // Central differences err by h^2/6 times the third derivative along v, which is large with v
  // spread over ~3000 parameters (the error measured 5e-7 at h = 1e-4 and 5e-9 at h = 1e-5,
  // falling as h^2), plus the gradient's rounding divided by 2h (~1e-11 at h = 1e-5). 1e-7 of the
  // largest entry of H v (~2.6) leaves room for both, and a wrong second-order term of any
  // weight would be far above it.
  const double h = 1e-5;
  const auto plus = gradient_at(h), minus = gradient_at(-h);
  double largest = 0.0, worst = 0.0;
  for (std::size_t i = 0; i < theta.size(); ++i) {
    const xt::xarray<double> numeric = (plus[i].value() - minus[i].value()) / (2 * h);
    largest = std::max(largest, xt::amax(xt::abs(hv[i].value()))());
    worst = std::max(worst, xt::amax(xt::abs(hv[i].value() - numeric))());
  }
  ASSERT_GT(largest, 0.1);  // a zero H v would pass any relative test
  EXPECT_LE(worst, 1e-7 * largest);
}

}  // namespace
}  // namespace tapegrad
