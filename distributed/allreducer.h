#pragma once
// GradientAllreducer: sums every parameter's gradient over the ranks while the backward walk
// runs, PyTorch DistributedDataParallel's reducer, Horovod's fusion buffer. One per model:
//
//   Context ctx(argc, argv);
//   broadcast_parameters(ctx, model);
//   GradientAllreducer<float> reducer(ctx, model.named_parameters());
//   for (each step) {
//     optimizer.zero_grad();
//     const auto global_tokens = global_count(ctx, local_batch.ntokens);
//     GradientTape tape;
//     auto loss = loss_sum(model, local_batch) / global_tokens;      // this rank's share
//     tape.backward(loss);     // buckets start their allreduce as their gradients become final
//     reducer.wait();          // every grad() is now the sum over the ranks
//     optimizer.step();
//   }
//
// Normalisation: the reducer SUMS, it never divides. Normalise the loss by the GLOBAL number of
// target tokens (global_count, distributed/context.h); the sum of the ranks' gradients is then
// the gradient of the joined batch's loss exactly (up to the order of floating-point additions),
// also when ranks hold different numbers of tokens. Dividing by the number of ranks instead
// (averaging per-rank means) is wrong whenever the counts differ.
//
// Buckets: the parameters, in reverse registration order (the order backward finishes them),
// are cut into buckets of about bucket_bytes (a parameter larger than that is a bucket of its
// own); each bucket owns one flat buffer. A gradient hook on each parameter (Tensor::register_hook)
// copies the walk's total gradient into the buffer; when the bucket's last parameter is in, a
// non-blocking MPI_Iallreduce (SUM) of the buffer starts. Buckets start in index order on every
// rank: MPI matches collectives by the order they are started in, so a bucket that is ready
// before an earlier one waits until the earlier one has started (started in a different order,
// the sums would mix up buckets or hang).
//
// Overlap: the tape runs a parameter's hook as soon as the walk has passed the oldest op reading
// it (Tensor::register_hook), so the last layers' buckets start while the walk is still in the
// first layers. MPI moves a non-blocking collective on only inside MPI calls, so every hook also
// tests the started buckets (bench/distributed_bench.cpp measures how much is hidden).
//
// wait(): a bucket not started yet (a parameter that got no gradient on this rank, e.g. unused)
// starts with zeros in that parameter's place; then wait() completes every allreduce and writes
// the sums into the parameters' gradients (set_grad). A parameter that got a gradient on no rank
// is left without one (Optimizer::step leaves it untouched, as a single process would); each
// bucket carries one presence count per parameter for that. If an allreduce has not completed
// after options.timeout (a rank stalled or gone), wait() prints which bucket, its parameters,
// this rank, the ranks that have not started that bucket and the timeout to stderr and ends the
// job (MPI_Abort, exit code 3): MPI can neither cancel a pending collective nor finalise with one,
// so the process cannot carry on. To name the missing ranks, each rank sends every other rank a
// one-integer notice as it starts a bucket (ranks - 1 small messages per bucket and step).
//
// One backward per wait(): a parameter that already has a gradient when its hook runs (zero_grad
// was not called, or a second backward before wait()) throws ValueError naming it, since the
// earlier gradient would be overwritten unreduced. Hooks must run on the thread that made the
// Context (MPI_THREAD_FUNNELED): ValueError otherwise.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include "distributed/context.h"
#include "optim/optimizer.h"

namespace tapegrad::distributed {

struct AllreducerOptions {
  // Bytes of gradient per bucket. PyTorch's DDP takes 25 MiB; 1 MiB keeps several buckets (and so
  // overlap) for the small models tapegrad trains: the copy task's 43k parameters are 170 KiB.
  std::size_t bucket_bytes = std::size_t{1} << 20;
  // How long wait() lets an allreduce run before ending the job.
  std::chrono::duration<double> timeout = std::chrono::seconds(300);
  // Start each bucket's allreduce from the hooks, during the backward walk. false: hooks only
  // copy, and every bucket starts in wait(), after the walk (no overlap; the same sums, bit for
  // bit): the baseline the overlap benchmark measures against.
  bool start_during_backward = true;
};

template <class T>
class GradientAllreducer {
 public:
  // Checks that every rank has the same parameters (check_model_agreement) and the same
  // bucket_bytes, then registers one gradient hook per parameter. ValueError for no parameters,
  // an undefined one, bucket_bytes 0, or a timeout that is not positive and finite.
  GradientAllreducer(const Context& ctx, optim::NamedParameters<T> parameters, const AllreducerOptions& options = {});
  // Removes the hooks. An allreduce still running (no wait() after a backward) is completed
  // first, with the timeout: MPI may write into a bucket's buffer until then.
  ~GradientAllreducer();
  GradientAllreducer(const GradientAllreducer&) = delete;
  GradientAllreducer& operator=(const GradientAllreducer&) = delete;

  // Completes this step's allreduces and writes the sums into the gradients (see above).
  void wait();

  std::size_t bucket_count() const { return buckets_.size(); }
  // How many buckets have started their allreduce in this step so far (they start in index order).
  std::size_t buckets_started() const { return next_start_; }
  // The names of bucket i's parameters, in the order they sit in its buffer.
  std::vector<std::string> bucket_parameters(std::size_t i) const;

 private:
  struct Bucket {
    std::vector<std::size_t> params;    // indices into parameters_
    std::vector<std::size_t> offsets;   // where each starts in buffer
    std::vector<T> buffer;              // gradients, then one presence count per parameter
    std::size_t pending = 0;            // parameters whose gradient has not arrived this step
    std::uint64_t index = 0;            // its place in buckets_, the notice start() sends
    MPI_Request request = MPI_REQUEST_NULL;
  };

  // The hook of parameter i: copies g into its bucket and starts what is ready.
  void receive(std::size_t i, const xt::xarray<T>& g);
  // Starts buckets in index order while the next one is complete.
  void start_ready();
  void start(Bucket& bucket);
  // Tests the started buckets without waiting, which also moves them on.
  void progress();
  // Completes every started bucket, or ends the job once the timeout has passed.
  void complete_started();
  // Counts the other ranks' start notices into arrivals_: all of this step's, or those already here.
  void receive_arrivals(bool wait_for_all);
  // Reports bucket b's timeout, naming the ranks that have not started it, and ends the job.
  [[noreturn]] void time_out(std::size_t b);
  std::string describe_bucket(std::size_t b) const;

  const Context& ctx_;
  optim::NamedParameters<T> parameters_;
  AllreducerOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_, slot_of_;  // parameter -> its bucket, its place in it
  std::vector<bool> arrived_;                     // parameter -> its gradient came this step
  std::vector<std::uint64_t> hook_ids_;
  std::size_t next_start_ = 0;                    // the first bucket not started this step
  std::size_t next_done_ = 0;                     // the first started bucket not known complete
  std::vector<std::size_t> arrivals_;             // rank -> its start notices received this step
  MPI_Comm comm_ = MPI_COMM_NULL;                 // this reducer's duplicate of ctx.comm()
  static constexpr int kArrivalTag = 0x7a9;       // the notices' tag on comm_
};

extern template class GradientAllreducer<float>;
extern template class GradientAllreducer<double>;

}  // namespace tapegrad::distributed
