#pragma once
// How many times this thread has called operator new, for tests that a code path allocates
// nothing. Linking tests/support/allocation_counter.cpp replaces the global operator new and
// delete of the whole test program, so only the suites that need the count link it.
#include <cstddef>

namespace tapegrad::testing {

std::size_t allocations_on_this_thread();

}  // namespace tapegrad::testing
