#pragma once
// Context: the process's MPI session, for data-parallel training. One per process,
// made by the main thread before any other distributed call and kept until the end of training:
//
//   int main(int argc, char** argv) {
//     tapegrad::distributed::Context ctx(argc, argv);   // MPI_Init_thread(FUNNELED) ... MPI_Finalize
//     ...
//   }
//
// Threads: MPI is initialised at MPI_THREAD_FUNNELED: only the thread that made the Context calls
// MPI. tapegrad's TBB workers never do; GradientAllreducer's hooks run on the thread running
// backward, which must therefore be that thread too (it checks, and throws ValueError if not).
//
// All collective calls of this layer go through a duplicate of MPI_COMM_WORLD, so they cannot be
// matched with the program's own MPI calls. MPI errors on it return codes (not MPI's default
// abort), which become MpiError naming the call.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <mpi.h>

namespace tapegrad::distributed {

// An MPI call failed (the message names the call and MPI's error string).
class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Context {
 public:
  // Initialises MPI with MPI_THREAD_FUNNELED. Throws MpiError when MPI gives a lower thread level
  // (MPI is finalised again first), and ValueError when MPI is already initialised (a second
  // Context, or the program called MPI_Init itself: MPI can be initialised once per process).
  Context(int& argc, char**& argv);
  // Without the command line (MPI_Init_thread(nullptr, nullptr, ...), as MPI allows).
  Context();
  // Frees the communicator and finalises MPI. MPI_Finalize waits for every rank: a rank that
  // leaves with a collective still pending on another rank waits until that rank's timeout
  // (GradientAllreducer) ends the job.
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The duplicate of MPI_COMM_WORLD every call of this layer uses.
  MPI_Comm comm() const { return comm_; }

  // Ends every rank of the job with `code` (MPI_Abort): the way out when a collective can no
  // longer complete, since MPI can neither cancel it nor finalise with it pending.
  [[noreturn]] void abort(int code) const;

 private:
  void init(int* argc, char*** argv);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

// Throws MpiError "<what>: <MPI's error string>" unless rc is MPI_SUCCESS.
void check_mpi(int rc, const std::string& what);

// The smallest and the largest of the ranks' `value` (one MPI_Allreduce; every rank gets the
// same pair): how a collective call checks that every rank passed the same argument. `what`
// names the caller in an MpiError.
std::pair<std::uint64_t, std::uint64_t> min_and_max(const Context& ctx, std::uint64_t value, const std::string& what);
std::pair<int, int> min_and_max(const Context& ctx, int value, const std::string& what);

// The sum over all ranks of `local` (MPI_Allreduce): every rank gets the same value, or every
// rank throws the same ValueError when the sum passes 2^64 - 1 (never a wrapped count). Used for the
// global number of target tokens, so that each rank normalises its loss by it:
//
//   const auto global_tokens = global_count(ctx, batch.ntokens);         // same on every rank
//   loss = loss_sum_over_local_tokens / global_tokens;                   // this rank's share
//
// Summing the ranks' gradients of these shares (GradientAllreducer) then gives exactly the
// gradient of the mean over the joined batch, whatever the ranks' token counts. (Averaging
// per-rank means instead weighs a token of a small shard more than one of a large shard.)
std::uint64_t global_count(const Context& ctx, std::uint64_t local);

// The sum over all ranks of `local`, e.g. the ranks' loss shares to print the joined batch's loss.
double global_sum(const Context& ctx, double local);

}  // namespace tapegrad::distributed
