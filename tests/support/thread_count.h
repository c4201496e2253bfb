#pragma once
// A test that changes the kernels' thread count declares one DefaultThreadsAtExit first: the
// default (all cores) comes back when the test ends, also when an ASSERT or an exception ends it
// early. The sanitized suite runs each test executable in one process, where a count left behind
// would carry over into the next tests.
#include "autograd/kernels/parallel.h"

namespace tapegrad::testing_support {

class DefaultThreadsAtExit {
 public:
  DefaultThreadsAtExit() = default;
  ~DefaultThreadsAtExit() { set_num_threads(0); }
  DefaultThreadsAtExit(const DefaultThreadsAtExit&) = delete;
  DefaultThreadsAtExit& operator=(const DefaultThreadsAtExit&) = delete;
};

}  // namespace tapegrad::testing_support
