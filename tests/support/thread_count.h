#pragma once
// A test that changes the kernels' thread count declares one ThreadCountTest first:
// - while it lives, every partition of more than one part goes to TBB (SpreadPolicy::kAlwaysSpread),
//   so a test comparing thread counts compares split work, whatever the measured rule would pick
//   on this machine at this moment (base/spread.h);
// - when the test ends, also through an ASSERT or an exception, the default thread count (all
//   cores) and the measured policy come back. The sanitized suite runs each test executable in one
//   process, where a count left behind would carry over into the next tests.
#include "autograd/base/spread.h"
#include "autograd/kernels/parallel.h"

namespace tapegrad::testing_support {

class ThreadCountTest {
 public:
  ThreadCountTest() { set_spread_policy(SpreadPolicy::kAlwaysSpread); }
  ~ThreadCountTest() {
    set_num_threads(0);
    set_spread_policy(SpreadPolicy::kMeasured);
  }
  ThreadCountTest(const ThreadCountTest&) = delete;
  ThreadCountTest& operator=(const ThreadCountTest&) = delete;
};

}  // namespace tapegrad::testing_support
