#include "autograd/kernels/parallel.h"

#include <memory>
#include <mutex>

#include <tbb/global_control.h>

#include "autograd/base/errors.h"

namespace tapegrad {

namespace {
std::mutex control_mutex;
std::unique_ptr<tbb::global_control> thread_limit;
}  // namespace

void set_num_threads(std::size_t n) {
  // A negative int converted to size_t lands here; no machine has a million cores.
  if (n > (std::size_t{1} << 20)) {
    throw ValueError("set_num_threads: n = " + std::to_string(n) +
                     " is not a thread count (a negative number converted?)");
  }
  std::lock_guard lock(control_mutex);
  thread_limit.reset();
  if (n > 0) thread_limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, n);
}

std::size_t num_threads() {
  return tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
}

}  // namespace tapegrad
