// distributed/ under `mpirun -np 2` (tests/CMakeLists.txt): every rank runs every test, so each
// test makes the same collective calls in the same order on all ranks. `--stall` and `--kill`
// run a failure scenario instead (tests/distributed/failure.sh).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <xtensor/xview.hpp>

#include "autograd/core/custom_op.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "distributed/allreducer.h"
#include "distributed/parameters.h"
#include "nn/copy_task/copy_task.h"
#include "nn/linear.h"
#include "optim/adam.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using distributed::AllreducerOptions;
using distributed::Context;
using distributed::GradientAllreducer;

Context* ctx = nullptr;  // made by main()

// max |a - b| / max |b|: relative to the tensor's scale, so that entries near zero (where the
// two reduction orders differ by rounding alone) do not count as large relative errors.
double relative_diff(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  const double scale = xt::amax(xt::abs(b))();
  const double diff = max_abs_diff(a, b);
  return scale > 0 ? diff / scale : diff;
}

// Whether every rank holds the same bytes.
bool same_on_all_ranks(const std::vector<double>& values) {
  std::vector<double> first(values);
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_DOUBLE, 0, ctx->comm());
  const int mine = std::memcmp(first.data(), values.data(), values.size() * sizeof(double)) == 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, ctx->comm());
  return all;
}

// Rows [begin, end) of a [B, S] token array.
IndexArray rows(const IndexArray& data, std::size_t begin, std::size_t end) {
  return xt::view(data, xt::range(begin, end), xt::all());
}

// The copy-task Transformer at its smallest, float64, no dropout; sequences padded at the end by
// different amounts, so that the ranks' shards hold different numbers of target tokens.
copy_task::Config tiny_config() {
  copy_task::Config config;
  config.seq_len = 7;
  config.d_model = 8;
  config.d_ff = 16;
  config.heads = 2;
  config.layers = 1;
  config.dropout = 0.0;
  return config;
}

IndexArray padded_sequences(std::size_t batch, const copy_task::Config& config, Generator& gen) {
  IndexArray data = copy_task::random_sequences(batch, config.seq_len, config.vocab, gen);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t s = config.seq_len - b % 4; s < config.seq_len; ++s) data(b, s) = copy_task::kPad;
  return data;
}

// 2 ranks on a split batch equal 1 rank on the joined batch: each rank trains the distributed
// model on its shard and, as the reference, a copy of the same model on the joined batch alone.
TEST(Distributed, SplitBatchEqualsJoinedBatchOverThreeAdamSteps) {
  const auto config = tiny_config();
  Generator ref_gen(100), own_gen(100 + static_cast<std::uint64_t>(ctx->rank()));
  auto reference = copy_task::make_model<double>(config, ref_gen);
  auto model = copy_task::make_model<double>(config, own_gen);  // other values on other ranks...
  distributed::broadcast_parameters(*ctx, *model);               // ... until rank 0's are broadcast
  const auto params = model->named_parameters(), ref_params = reference->named_parameters();
  ASSERT_EQ(params.size(), ref_params.size());
  for (std::size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(max_abs_diff(params[i].second.value(), ref_params[i].second.value()), 0.0) << params[i].first;

  // Small buckets, so that several allreduces are in flight and must stay in order.
  GradientAllreducer<double> reducer(*ctx, params, {.bucket_bytes = 2048});
  EXPECT_GT(reducer.bucket_count(), 3u);
  const optim::AdamOptions adam{.lr = 1e-2, .betas = {0.9, 0.98}, .eps = 1e-9};
  optim::Adam<double> optimizer(params, adam), ref_optimizer(ref_params, adam);

  Generator data_gen(7);  // the joined batches, the same on every rank
  const std::size_t joined_rows = 7;
  const auto r = static_cast<std::size_t>(ctx->rank()), n = static_cast<std::size_t>(ctx->size());
  double worst_loss = 0, worst_grad = 0, worst_param = 0;
  for (int step = 0; step < 3; ++step) {
    const IndexArray joined_data = padded_sequences(joined_rows, config, data_gen);
    const copy_task::Batch joined = copy_task::make_batch(joined_data);
    // Rank r's shard: rows [r B / n, (r+1) B / n), 3 and 4 rows at 2 ranks, with their pads.
    const copy_task::Batch local = copy_task::make_batch(rows(joined_data, r * joined_rows / n, (r + 1) * joined_rows / n));
    const std::uint64_t global_tokens = distributed::global_count(*ctx, local.ntokens);
    ASSERT_EQ(global_tokens, joined.ntokens);

    optimizer.zero_grad();
    double share = 0;
    {
      GradientTape tape;
      // batch_loss is the mean over the shard's tokens: times its count over the global count
      // makes it this rank's share of the joined batch's mean.
      const auto loss = mul(copy_task::batch_loss(*model, local),
                            static_cast<double>(local.ntokens) / static_cast<double>(global_tokens));
      share = loss.item();
      tape.backward(loss);
    }
    reducer.wait();
    ref_optimizer.zero_grad();
    double ref_loss = 0;
    {
      GradientTape tape;
      const auto loss = copy_task::batch_loss(*reference, joined);
      ref_loss = loss.item();
      tape.backward(loss);
    }
    const double loss = distributed::global_sum(*ctx, share);
    worst_loss = std::max(worst_loss, std::abs(loss - ref_loss) / std::abs(ref_loss));
    for (std::size_t i = 0; i < params.size(); ++i) {
      ASSERT_TRUE(params[i].second.has_grad()) << params[i].first;
      const double d = relative_diff(params[i].second.grad(), ref_params[i].second.grad());
      worst_grad = std::max(worst_grad, d);
      EXPECT_LE(d, 1e-12) << "step " << step << ": gradient of " << params[i].first;
    }
    optimizer.step();
    ref_optimizer.step();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double d = relative_diff(params[i].second.value(), ref_params[i].second.value());
      worst_param = std::max(worst_param, d);
      EXPECT_LE(d, 1e-12) << "step " << step << ": parameter " << params[i].first;
    }
  }
  EXPECT_LE(worst_loss, 1e-12);
  std::printf("rank %d: max relative difference to the joined batch over 3 Adam steps: loss %.3g, gradient %.3g, "
              "parameter %.3g\n",
              ctx->rank(), worst_loss, worst_grad, worst_param);

  // The ranks' models stay the same bit for bit (each gets the same sums).
  std::vector<double> all;
  for (const auto& [name, p] : params) all.insert(all.end(), p.value().begin(), p.value().end());
  EXPECT_TRUE(same_on_all_ranks(all));

  // Rank 0's optimiser state reaches a fresh optimiser on every rank.
  optim::Adam<double> resumed(params, adam);
  if (ctx->rank() == 0) resumed.load_state(optimizer.state());
  distributed::broadcast_optimizer_state(*ctx, resumed);
  const auto state = resumed.state();
  EXPECT_EQ(state.size(), optimizer.state().size());
  std::vector<double> state_values;
  for (const auto& [key, value] : state) state_values.insert(state_values.end(), value.begin(), value.end());
  EXPECT_TRUE(same_on_all_ranks(state_values));
  EXPECT_FALSE(state_values.empty());
}

// A parameter without a gradient on one rank (unused there) gets the other ranks' sum; one with
// a gradient on no rank stays without one. Each parameter is a bucket of its own, and the unused
// ones come first in bucket order, so the later buckets must wait for wait() to start them.
TEST(Distributed, UnusedParametersKeepTheBucketOrder) {
  Tensor<double> a(xt::xarray<double>{1.0, 2.0}, true), b(xt::xarray<double>{3.0, 4.0, 5.0}, true),
      c(xt::xarray<double>{6.0}, true);
  GradientAllreducer<double> reducer(*ctx, {{"a", a}, {"b", b}, {"c", c}}, {.bucket_bytes = 1});
  ASSERT_EQ(reducer.bucket_count(), 3u);
  EXPECT_EQ(reducer.bucket_parameters(0), std::vector<std::string>{"c"});  // reverse registration order
  for (int step = 0; step < 2; ++step) {
    for (auto* p : {&a, &b, &c}) p->zero_grad();
    {
      GradientTape tape;
      auto loss = sum(mul(a, a));
      if (ctx->rank() == 0) loss = add(loss, sum(b));
      tape.backward(loss);
    }
    reducer.wait();
    ASSERT_TRUE(a.has_grad());
    ASSERT_TRUE(b.has_grad());
    const double ranks = ctx->size();
    EXPECT_EQ(max_abs_diff(a.grad(), xt::xarray<double>{2.0 * ranks, 4.0 * ranks}), 0.0);
    EXPECT_EQ(max_abs_diff(b.grad(), xt::xarray<double>{1.0, 1.0, 1.0}), 0.0);
    EXPECT_FALSE(c.has_grad());
  }
}

// Overlap: every bucket has started before the walk reaches the oldest op (a probe on the input,
// whose backward runs last), since each parameter's hook runs as soon as its gradient is final.
// Without start_during_backward none has, and the sums are the same bits.
TEST(Distributed, BucketsStartDuringTheBackwardWalk) {
  Generator gen(4);
  nn::Linear<double> first(3, 5, gen), second(5, 2, gen);
  optim::NamedParameters<double> parameters = first.named_parameters();
  for (const auto& named : second.named_parameters()) parameters.push_back(named);
  const auto x = Tensor<double>::randn({4, 3}, gen, 0.0, 1.0 + ctx->rank(), /*requires_grad=*/true);
  std::vector<xt::xarray<double>> sums[2];
  for (const bool overlap : {true, false}) {
    GradientAllreducer<double> reducer(*ctx, parameters, {.bucket_bytes = 1, .start_during_backward = overlap});
    ASSERT_EQ(reducer.bucket_count(), 4u);
    std::size_t started_before_probe = 99;
    for (auto& [name, p] : parameters) p.zero_grad();
    {
      GradientTape tape;
      const auto probed = custom_op("probe", xt::xarray<double>(x.value()),
                                    [&](const xt::xarray<double>&, const xt::xarray<double>&) {
                                      started_before_probe = reducer.buckets_started();
                                    },
                                    x);
      tape.backward(sum(second(tanh(first(probed)))));
    }
    EXPECT_EQ(started_before_probe, overlap ? 4u : 0u) << overlap;
    reducer.wait();
    for (auto& [name, p] : parameters) sums[overlap].push_back(p.grad());
  }
  for (std::size_t i = 0; i < parameters.size(); ++i) EXPECT_EQ(max_abs_diff(sums[0][i], sums[1][i]), 0.0) << i;
}

// A reducer destroyed after a backward without wait() still sent its start notices. They travel on
// its own communicator, so none is left on the context's where a later reducer (or the user) could
// take it for its own; the next reducer's sums are right.
TEST(Distributed, ReducerDroppedBeforeWaitLeavesNoMessageBehind) {
  Tensor<double> a(xt::xarray<double>{1.0, 2.0}, true);
  {
    GradientAllreducer<double> dropped(*ctx, {{"a", a}});
    GradientTape tape;
    tape.backward(sum(a));
  }
  MPI_Barrier(ctx->comm());  // every notice sent before it has arrived by now
  int waiting = 0;
  for (int attempt = 0; attempt < 100 && !waiting; ++attempt)
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ctx->comm(), &waiting, MPI_STATUS_IGNORE);
  EXPECT_FALSE(waiting);
  MPI_Barrier(ctx->comm());
  a.zero_grad();
  GradientAllreducer<double> next(*ctx, {{"a", a}});
  {
    GradientTape tape;
    tape.backward(sum(mul(a, a)));
  }
  next.wait();
  EXPECT_EQ(max_abs_diff(a.grad(), xt::xarray<double>{2.0, 4.0} * ctx->size()), 0.0);
}

TEST(Distributed, SecondBackwardBeforeWaitIsRefused) {
  Tensor<double> a(xt::xarray<double>{1.0, 2.0}, true);
  GradientAllreducer<double> reducer(*ctx, {{"a", a}});
  {
    GradientTape tape;
    tape.backward(sum(a));
  }
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        GradientTape tape;
        tape.backward(sum(a));
      },
      {"GradientAllreducer: parameter 'a' already has a gradient", "zero_grad()"}));
  reducer.wait();
  EXPECT_EQ(max_abs_diff(a.grad(), xt::xarray<double>{1.0, 1.0} * ctx->size()), 0.0);
}

TEST(Distributed, BackwardOnAnotherThreadIsRefused) {
  Tensor<double> a(xt::xarray<double>{1.0, 2.0}, true);
  GradientAllreducer<double> reducer(*ctx, {{"a", a}});
  std::string message;
  std::thread worker([&] {
    try {
      GradientTape tape;
      tape.backward(sum(a));
    } catch (const ValueError& e) {
      message = e.what();
    }
  });
  worker.join();
  EXPECT_NE(message.find("MPI_THREAD_FUNNELED"), std::string::npos) << message;
  reducer.wait();  // nothing arrived: every rank reduces zeros, and a keeps no gradient
  EXPECT_FALSE(a.has_grad());
}

// Ranks with different models are told which parameter differs, on every rank, at start-up.
TEST(Distributed, ModelMismatchIsReportedOnEveryRank) {
  Generator gen(1);
  nn::Linear<double> shape_differs(4, ctx->rank() == 1 ? 5 : 3, gen);
  EXPECT_TRUE(throws_with<ValueError>([&] { distributed::check_model_agreement(*ctx, shape_differs); },
                                      {"check_model_agreement: the ranks do not have the same model: rank 1 differs "
                                       "from rank 0 at parameter 1 of 2: rank 0 has 'weight' [3,4] float64, rank 1 "
                                       "has 'weight' [5,4] float64 (ranks that differ from rank 0: 1)"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { distributed::broadcast_parameters(*ctx, shape_differs); },
                                      {"broadcast_parameters: the ranks do not have the same model: rank 1"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { GradientAllreducer<double> reducer(*ctx, shape_differs.named_parameters()); },
      {"GradientAllreducer: the ranks do not have the same model: rank 1"}));

  nn::Linear<double> count_differs(4, 3, gen, /*bias=*/ctx->rank() != 1);
  EXPECT_TRUE(throws_with<ValueError>([&] { distributed::check_model_agreement(*ctx, count_differs); },
                                      {"rank 0 has 2 parameters, rank 1 has 1; parameter 2 is rank 0's 'bias' [3] "
                                       "float64"}));
  nn::Linear<double> same(4, 3, gen);
  EXPECT_NO_THROW(distributed::check_model_agreement(*ctx, same));
}

TEST(Distributed, BadArgumentsAreRefused) {
  Generator gen(1);
  nn::Linear<double> layer(4, 3, gen);
  EXPECT_TRUE(throws_with<ValueError>([&] { distributed::broadcast_parameters(*ctx, layer, ctx->size()); },
                                      {"broadcast_parameters: root 2 is not a rank of this job (ranks 0..1)"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { GradientAllreducer<double> reducer(*ctx, {}); },
                                      {"GradientAllreducer: parameters is empty"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { GradientAllreducer<double> reducer(*ctx, layer.named_parameters(), {.bucket_bytes = 0}); },
      {"GradientAllreducer: options.bucket_bytes is 0"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        GradientAllreducer<double> reducer(*ctx, layer.named_parameters(),
                                           {.timeout = std::chrono::duration<double>(0.0)});
      },
      {"GradientAllreducer: options.timeout is 0"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        GradientAllreducer<double> reducer(*ctx, layer.named_parameters(),
                                           {.bucket_bytes = 1000 + static_cast<std::size_t>(ctx->rank())});
      },
      {"GradientAllreducer: the ranks' options.bucket_bytes differ (from 1000 to 1001)"}));
}

// Each rank naming itself as the root once broadcast nothing and left every rank with its own
// values: the roots are compared first, and every rank throws before anything is sent.
TEST(Distributed, RanksPassingDifferentRootsAreToldOnEveryRank) {
  Generator gen(static_cast<std::uint64_t>(ctx->rank()) + 1);  // different values on each rank
  nn::Linear<double> layer(4, 3, gen);
  const xt::xarray<double> before = layer.weight().value();
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { distributed::broadcast_parameters(*ctx, layer, ctx->rank()); },
      {"broadcast_parameters: the ranks' roots differ (from 0 to 1); every rank must pass the same root"}));
  EXPECT_EQ(layer.weight().value(), before);
  optim::Adam<double> adam(layer.named_parameters(), {.lr = 0.1});
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { distributed::broadcast_optimizer_state(*ctx, adam, ctx->rank()); },
      {"broadcast_optimizer_state: the ranks' roots differ (from 0 to 1)"}));
  // One rank's root out of range, the other's valid: the difference is what every rank hears.
  EXPECT_TRUE(throws_with<ValueError>([&] { distributed::broadcast_parameters(*ctx, layer, ctx->rank() * 5); },
                                      {"broadcast_parameters: the ranks' roots differ (from 0 to 5)"}));
  distributed::broadcast_parameters(*ctx, layer, 1);
  EXPECT_TRUE(same_on_all_ranks(std::vector<double>(layer.weight().value().begin(), layer.weight().value().end())));
}

// The sum of the ranks' counts is exact up to 2^64 - 1, and past it an error on every rank (MPI_SUM
// once wrapped 2^64 - 1 + 1 around to 0).
TEST(Distributed, GlobalCountIsExactOrRefusesToWrap) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const bool first = ctx->rank() == 0;
  EXPECT_EQ(distributed::global_count(*ctx, first ? 0xffffffffu : 1), std::uint64_t{1} << 32);  // a carry
  EXPECT_EQ(distributed::global_count(*ctx, first ? kMax - 5 : 5), kMax);
  EXPECT_EQ(distributed::global_count(*ctx, first ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1), kMax);
  for (const auto& [mine, other] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {kMax, 1}, {std::uint64_t{1} << 63, std::uint64_t{1} << 63}, {kMax, kMax}}) {
    const std::uint64_t local = first ? mine : other;
    EXPECT_TRUE(throws_with<ValueError>([&] { distributed::global_count(*ctx, local); },
                                        {"distributed::global_count: the 2 ranks' counts sum past 2^64 - 1 (this "
                                         "rank's count is " + std::to_string(local) + ")"}));
  }
}

// docs/distributed.md's block, as written, for one step of the float32 copy-task Transformer on this
// rank's shard: every rank then holds the joined batch's gradient (what one process computes on
// the whole batch) and, after the step, the same parameters.
TEST(Distributed, DocSnippetGivesEveryRankTheJoinedBatchsGradient) {
  const auto config = tiny_config();
  Generator own_gen(100 + static_cast<std::uint64_t>(ctx->rank())), ref_gen(100);
  auto model_ptr = copy_task::make_model<float>(config, own_gen);
  auto reference = copy_task::make_model<float>(config, ref_gen);  // rank 0's initial values
  auto& model = *model_ptr;
  optim::Adam<float> optimizer(model.named_parameters());
  Generator data_gen(7);
  const std::size_t joined_rows = 7;
  const IndexArray joined_data = padded_sequences(joined_rows, config, data_gen);
  const auto r = static_cast<std::size_t>(ctx->rank()), n = static_cast<std::size_t>(ctx->size());
  const copy_task::Batch batch =
      copy_task::make_batch(rows(joined_data, r * joined_rows / n, (r + 1) * joined_rows / n));
  using copy_task::batch_loss;
  const auto run = [&](distributed::Context& ctx) {
#include "doc_snippets/distributed_data_parallel.inc"
  };
  run(*ctx);

  {
    GradientTape tape;
    tape.backward(batch_loss(*reference, copy_task::make_batch(joined_data)));
  }
  const auto params = model.named_parameters(), ref_params = reference->named_parameters();
  ASSERT_EQ(params.size(), ref_params.size());
  std::vector<double> all;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const xt::xarray<double> grad = xt::cast<double>(params[i].second.grad());
    EXPECT_LE(relative_diff(grad, xt::cast<double>(ref_params[i].second.grad())), 1e-5) << params[i].first;
    all.insert(all.end(), params[i].second.value().begin(), params[i].second.value().end());
  }
  EXPECT_TRUE(same_on_all_ranks(all));
}

// The failure scenarios (tests/distributed/failure.sh): rank 1 stalls (sleeps) or dies (SIGKILL)
// at its third step, before its backward; rank 0 reaches wait(), and its 2 s timeout must end the
// whole job with a message naming the bucket and rank 1.
int run_failure(bool kill) {
  Generator gen(1);
  nn::Linear<double> layer(4, 3, gen);
  GradientAllreducer<double> reducer(*ctx, layer.named_parameters(), {.timeout = std::chrono::seconds(2)});
  for (int step = 0; step < 3; ++step) {
    if (ctx->rank() == 1 && step == 2) {
      if (kill) std::raise(SIGKILL);                         // a rank that dies
      std::this_thread::sleep_for(std::chrono::seconds(120));  // a rank that hangs
      return 0;
    }
    layer.zero_grad();
    {
      GradientTape tape;
      tape.backward(sum(layer(Tensor<double>::ones({2, 4}))));
    }
    reducer.wait();  // at step 2 on rank 0, does not return: the timeout ends the job
    std::printf("rank %d: step %d reduced\n", ctx->rank(), step);
    std::fflush(stdout);
  }
  std::puts("wait() returned although rank 1 never reduced");
  return 0;
}

}  // namespace
}  // namespace tapegrad

int main(int argc, char** argv) {
  tapegrad::distributed::Context context(argc, argv);
  tapegrad::ctx = &context;
  if (argc > 1 && std::strcmp(argv[1], "--stall") == 0) return tapegrad::run_failure(/*kill=*/false);
  if (argc > 1 && std::strcmp(argv[1], "--kill") == 0) return tapegrad::run_failure(/*kill=*/true);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
