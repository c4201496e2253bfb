#include "distributed/context.h"

#include <cstdlib>

#include "autograd/errors.h"

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

std::uint64_t global_count(const Context& ctx, std::uint64_t local) {
  std::uint64_t total = 0;
  check_mpi(MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, ctx.comm()), "distributed::global_count: MPI_Allreduce");
  return total;
}

double global_sum(const Context& ctx, double local) {
  double total = 0;
  check_mpi(MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, ctx.comm()), "distributed::global_sum: MPI_Allreduce");
  return total;
}

}  // namespace tapegrad::distributed
