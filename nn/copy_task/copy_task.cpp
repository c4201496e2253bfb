#include "nn/copy_task/copy_task.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include <xtensor/xview.hpp>

#include "autograd/base/errors.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"
#include "autograd/base/checks.h"
#include "nn/copy_task/model_size.h"
#include "nn/io/checkpoint.h"
#include "nn/dropout.h"

namespace tapegrad::copy_task {

namespace {
// The Annotated Transformer: Adam(lr = 1, betas (0.9, 0.98), eps 1e-9); the Noam factor scales lr.
constexpr double kBaseLr = 1.0;
// The checkpoint metadata key of the sequence length trained at.
constexpr const char* kSeqLenKey = "copy_task.seq_len";
}  // namespace

IndexArray random_sequences(std::size_t batch, std::size_t seq_len, std::size_t vocab, Generator& gen) {
  IndexArray data = IndexArray::from_shape({batch, seq_len});
  for (std::size_t b = 0; b < batch; ++b) {
    data(b, 0) = kStart;
    for (std::size_t s = 1; s < seq_len; ++s) data(b, s) = gen.randint(2, static_cast<Index>(vocab));
  }
  return data;
}

IndexArray corrupt_sequences(const IndexArray& data, std::size_t vocab, Generator& gen) {
  if (vocab < 4) throw ValueError("corrupt_sequences: vocab " + std::to_string(vocab) + " leaves no other token to draw");
  IndexArray out = data;
  for (std::size_t b = 0; b < data.shape()[0]; ++b) {
    for (std::size_t s = 1; s < data.shape()[1]; ++s) {
      const Index token = data(b, s);
      if (token < 2 || token >= static_cast<Index>(vocab)) {
        throw ValueError("corrupt_sequences: token " + std::to_string(token) + " at [" + std::to_string(b) + ", " +
                         std::to_string(s) + "] is outside [2, " + std::to_string(vocab) + ")");
      }
      const Index drawn = gen.randint(2, static_cast<Index>(vocab) - 1);
      out(b, s) = drawn >= token ? drawn + 1 : drawn;  // skips the token itself, uniform over the rest
    }
  }
  return out;
}

Batch make_batch(const IndexArray& data) {
  const std::size_t batch = data.shape()[0], seq = data.shape()[1];
  IndexArray tgt_in = IndexArray::from_shape({batch, seq - 1}), tgt_out = IndexArray::from_shape({batch, seq - 1});
  std::size_t ntokens = 0;
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t s = 0; s + 1 < seq; ++s) {
      tgt_in(b, s) = data(b, s);
      tgt_out(b, s) = data(b, s + 1);
      ntokens += data(b, s + 1) != kPad;
    }
  }
  AttendMask src_mask = nn::transformer::make_src_mask(data, kPad), tgt_mask = nn::transformer::make_tgt_mask(tgt_in, kPad);
  return Batch{data, std::move(tgt_in), std::move(tgt_out), std::move(src_mask), std::move(tgt_mask), ntokens};
}

template <class T>
std::unique_ptr<nn::transformer::Transformer<T>> make_model(const Config& config, Generator& gen) {
  const nn::transformer::TransformerOptions options{
      .src_vocab_size = config.vocab,
      .tgt_vocab_size = config.vocab,
      .max_len = config.seq_len,
      .pad_idx = kPad,
      .N = config.layers,
      .layer = {.d_model = config.d_model, .d_ff = config.d_ff, .heads_num = config.heads, .dropout_rate = config.dropout}};
  return std::make_unique<nn::transformer::Transformer<T>>(options, gen);
}

template <class T>
Tensor<T> batch_loss(nn::transformer::Transformer<T>& model, const Batch& batch, double label_smoothing) {
  const Tensor<T> out = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask);  // with its hooks
  const Tensor<T> log_probs = model.generator(out);
  // The generator gives log-probabilities; cross_entropy's log_softmax leaves them unchanged.
  const Tensor<T> flat = reshape(log_probs, {-1, static_cast<Index>(log_probs.shape()[2])});
  IndexArray targets = batch.tgt_out;
  targets.reshape({targets.size()});
  return cross_entropy(flat, targets, {.ignore_index = kPad, .label_smoothing = label_smoothing});
}

template std::unique_ptr<nn::transformer::Transformer<float>> make_model(const Config&, Generator&);
template std::unique_ptr<nn::transformer::Transformer<double>> make_model(const Config&, Generator&);
template Tensor<float> batch_loss(nn::transformer::Transformer<float>&, const Batch&, double);
template Tensor<double> batch_loss(nn::transformer::Transformer<double>&, const Batch&, double);

IndexArray greedy_decode(nn::transformer::Transformer<float>& model, const IndexArray& src, std::size_t max_len) {
  const std::size_t batch = src.shape()[0];
  const AttendMask src_mask = nn::transformer::make_src_mask(src, kPad);
  const Tensor<float> memory = model.encode(src, src_mask);
  IndexArray ys = IndexArray::from_shape({batch, 1});
  ys.fill(kStart);
  for (std::size_t t = 1; t < max_len; ++t) {
    const Tensor<float> out = model.decode(memory, src_mask, ys, nn::transformer::make_tgt_mask(ys, kPad));
    const Tensor<float> last = model.generator(narrow(out, 1, static_cast<Index>(t - 1), 1));  // [B, 1, V]
    IndexArray next = IndexArray::from_shape({batch, t + 1});
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t s = 0; s < t; ++s) next(b, s) = ys(b, s);
      const std::size_t vocab = last.shape()[2];
      std::size_t best = 0;
      for (std::size_t v = 1; v < vocab; ++v)
        if (last.value()(b, 0, v) > last.value()(b, 0, best)) best = v;
      next(b, t) = static_cast<Index>(best);
    }
    ys = std::move(next);
  }
  return ys;
}

Trainer::Trainer(const Config& config)
    : config_(config), init_gen_(config.seed), data_gen_(config.seed + 0x9E3779B97F4A7C15ull) {
  check_fits_in_memory(config);  // before allocating: a model too large is named, not a bad_alloc
  model_ = make_model<float>(config, init_gen_);
  optimizer_ = std::make_unique<optim::Adam<float>>(
      model_->named_parameters(), optim::AdamOptions{.lr = kBaseLr, .betas = {0.9, 0.98}, .eps = 1e-9});
  reset_schedule(0);
  if (config.capture_steps) capture_ = std::make_unique<StepCapture>();
}

void Trainer::reset_schedule(std::size_t step) {
  // LRScheduler takes the groups' current lr as their initial lr, and its lr is a pure function of
  // its step count: restore the base lr, then replay `step` steps.
  for (auto& group : optimizer_->param_groups()) group.lr = kBaseLr;
  scheduler_ = std::make_unique<optim::LRScheduler<float>>(
      *optimizer_, optim::noam(config_.d_model, config_.lr_factor, config_.warmup));
  for (std::size_t i = 0; i < step; ++i) scheduler_->step();
}

void Trainer::save(const std::filesystem::path& path) {
  nn::save_checkpoint(path, *model_, optimizer_->state(), steps_, {{"data", &data_gen_}},
                      {{kSeqLenKey, std::to_string(config_.seq_len)}});
}

std::optional<std::size_t> Trainer::load(const std::filesystem::path& path) {
  const auto checkpoint = nn::load_checkpoint(path, *model_, /*strict=*/true, {{"data", &data_gen_}});
  optimizer_->load_state(checkpoint.optimizer_state);
  steps_ = checkpoint.step;
  reset_schedule(steps_);
  const auto it = checkpoint.metadata.find(kSeqLenKey);
  if (it == checkpoint.metadata.end()) return std::nullopt;
  const std::string& text = it->second;
  std::size_t seq_len = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seq_len);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw ValueError("copy_task::Trainer::load('" + path.string() + "'): __metadata__ '" + kSeqLenKey + "' = '" +
                     text + "' is not a decimal integer");
  }
  return seq_len;
}

void Trainer::throw_diverged(double loss, std::size_t batch_in_epoch) const {
  // Every later loss would be NaN too, and the update would carry it into the parameters (and a
  // checkpoint): stop before it, naming where.
  std::ostringstream message;
  message << "the training loss is " << (std::isnan(loss) ? "NaN" : loss > 0 ? "+inf" : "-inf") << " at step " << steps_ + 1 << " (epoch "
          << steps_ / config_.batches_per_epoch + 1 << ", batch " << batch_in_epoch + 1 << " of "
          << config_.batches_per_epoch << "): training diverged; a smaller Noam factor (now " << config_.lr_factor
          << ") or a longer warm-up (now " << config_.warmup << ") usually helps";
  throw std::runtime_error(message.str());
}

void Trainer::set_data_parallel(DataParallel data_parallel) {
  const auto fail = [&](const std::string& why) { throw ValueError("copy_task::Trainer::set_data_parallel: " + why); };
  if (data_parallel.ranks == 0 || data_parallel.rank >= data_parallel.ranks)
    fail("rank " + std::to_string(data_parallel.rank) + " is not below ranks " + std::to_string(data_parallel.ranks));
  if (!data_parallel.sum_over_ranks || !data_parallel.reduce_gradients) fail("sum_over_ranks and reduce_gradients are required");
  if (config_.batch < data_parallel.ranks)
    fail("a batch of " + std::to_string(config_.batch) + " sequences cannot be split over " +
         std::to_string(data_parallel.ranks) + " ranks");
  data_parallel_ = std::move(data_parallel);
}

EpochStats Trainer::run_epoch(const std::function<void(std::size_t, double)>& on_step) {
  const MatmulPrecisionGuard precision(config_.matmul_precision);
  model_->train();
  const auto start = std::chrono::steady_clock::now();
  double loss_sum = 0.0, tokens = 0.0;
  for (std::size_t i = 0; i < config_.batches_per_epoch; ++i) {
    const auto [loss_value, batch_tokens] = capture_ ? capture_->run([&] { return train_step(i); }) : train_step(i);
    loss_sum += loss_value * batch_tokens;
    tokens += batch_tokens;
    if (on_step) on_step(i + 1, loss_value);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {loss_sum / tokens, steps_, tokens / seconds, scheduler_->last_lr()};
}

std::optional<StepCaptureStats> Trainer::capture_stats() const {
  if (capture_ == nullptr) return std::nullopt;
  return capture_->stats();
}

std::pair<double, double> Trainer::train_step(std::size_t batch_in_epoch) {
  const DataParallel& dp = data_parallel_;
  IndexArray sequences = random_sequences(config_.batch, config_.seq_len, config_.vocab, data_gen_);
  // This rank's rows; dropout draws the whole batch's masks and takes these rows' part.
  std::optional<nn::BatchRowsScope> rows;
  if (dp.ranks > 1) {
    const std::size_t first = dp.rank * config_.batch / dp.ranks, last = (dp.rank + 1) * config_.batch / dp.ranks;
    sequences = xt::view(sequences, xt::range(first, last), xt::all());
    rows.emplace(BatchRows{first, config_.batch});
  }
  const Batch batch = make_batch(sequences);
  const double batch_tokens =
      dp.ranks > 1 ? dp.sum_over_ranks(static_cast<double>(batch.ntokens)) : static_cast<double>(batch.ntokens);
  double loss_value;
  {
    GradientTape tape;
    Tensor<float> loss = batch_loss(*model_, batch, config_.label_smoothing);
    // This rank's share of the whole batch's mean: summed over the ranks, loss and gradients
    // are the whole batch's.
    if (dp.ranks > 1) loss = mul(loss, static_cast<float>(static_cast<double>(batch.ntokens) / batch_tokens));
    loss_value = dp.ranks > 1 ? dp.sum_over_ranks(loss.item()) : loss.item();
    if (!std::isfinite(loss_value)) throw_diverged(loss_value, batch_in_epoch);  // the same value, so every rank stops
    tape.backward(loss);
  }
  // Also on one rank: the reducer's hooks ran in backward, and wait() ends their step.
  if (dp.reduce_gradients) dp.reduce_gradients();
  optimizer_->step();
  optimizer_->zero_grad();
  scheduler_->step();
  ++steps_;
  return {loss_value, batch_tokens};
}

double Trainer::exact_match_accuracy(std::size_t n) {
  const MatmulPrecisionGuard precision(config_.matmul_precision);
  model_->eval();
  const IndexArray src = random_sequences(n, config_.seq_len, config_.vocab, data_gen_);
  const IndexArray decoded = greedy_decode(*model_, src, config_.seq_len);
  std::size_t correct = 0;
  for (std::size_t b = 0; b < n; ++b) {
    bool same = true;
    for (std::size_t s = 0; s < config_.seq_len; ++s) same = same && decoded(b, s) == src(b, s);
    correct += same;
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace tapegrad::copy_task
