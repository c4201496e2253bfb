#include "distributed/context.h"

#include <cstdlib>

#include "autograd/base/errors.h"

namespace tapegrad::distributed {

namespace {
std::string level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "thread level " + std::to_string(level);
  }
}
// The maximum of ~x is ~(the minimum of x), for signed and unsigned types alike: one allreduce
// gives both extremes.
template <class I>
std::pair<I, I> min_and_max_over_ranks(const Context& ctx, I value, MPI_Datatype type, const std::string& what) {
  const I mine[2] = {value, static_cast<I>(~value)};
  I maxima[2] = {value, value};
  check_mpi(MPI_Allreduce(mine, maxima, 2, type, MPI_MAX, ctx.comm()), what + ": MPI_Allreduce");
  return {static_cast<I>(~maxima[1]), maxima[0]};
}

}  // namespace

void check_mpi(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw MpiError(what + ": " + std::string(text, static_cast<std::size_t>(length)));
}

Context::Context(int& argc, char**& argv) { init(&argc, &argv); }
Context::Context() { init(nullptr, nullptr); }

void Context::init(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) {
    throw ValueError("distributed::Context: MPI is already initialised (MPI can be initialised once per process: "
                     "make one Context, and do not call MPI_Init yourself)");
  }
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "distributed::Context: MPI_Init_thread");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw MpiError("distributed::Context: MPI_Init_thread gave " + level_name(provided) +
                   ", but tapegrad needs MPI_THREAD_FUNNELED (the main thread calls MPI while TBB threads run)");
  }
  // The default handler aborts the job on any error; on our communicator errors come back as codes.
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Context::~Context() {
  MPI_Comm_free(&comm_);
  MPI_Finalize();
}

void Context::abort(int code) const {
  MPI_Abort(comm_, code);
  std::_Exit(code);  // MPI_Abort does not return; this makes that a promise to the compiler
}

std::pair<std::uint64_t, std::uint64_t> min_and_max(const Context& ctx, std::uint64_t value, const std::string& what) {
  return min_and_max_over_ranks(ctx, value, MPI_UINT64_T, what);
}

std::pair<int, int> min_and_max(const Context& ctx, int value, const std::string& what) {
  return min_and_max_over_ranks(ctx, value, MPI_INT, what);
}

std::uint64_t global_count(const Context& ctx, std::uint64_t local) {
  const std::string function = "distributed::global_count";
  // MPI_SUM wraps around silently: the two 32-bit halves are summed apart (no partial sum of
  // fewer than 2^32 ranks can wrap), then joined with checks.
  const std::uint64_t halves[2] = {local >> 32, local & 0xffffffffu};
  std::uint64_t sums[2] = {0, 0};
  check_mpi(MPI_Allreduce(halves, sums, 2, MPI_UINT64_T, MPI_SUM, ctx.comm()), function + ": MPI_Allreduce");
  std::uint64_t total = 0;
  if (sums[0] >> 32 != 0 || __builtin_add_overflow(sums[0] << 32, sums[1], &total)) {
    throw ValueError(function + ": the " + std::to_string(ctx.size()) +
                     " ranks' counts sum past 2^64 - 1 (this rank's count is " + std::to_string(local) + ")");
  }
  return total;
}

double global_sum(const Context& ctx, double local) {
  double total = 0;
  check_mpi(MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, ctx.comm()), "distributed::global_sum: MPI_Allreduce");
  return total;
}

}  // namespace tapegrad::distributed
