#pragma once
// Calls `attempt` on this thread while `capture` runs a step on another thread, and lets that
// step end however `attempt` leaves (it may throw, as the tests of that misuse expect).
#include <atomic>
#include <thread>

#include "autograd/memory/step_capture.h"

namespace tapegrad::testing {

template <class Attempt>
void while_capture_runs_on_another_thread(StepCapture& capture, Attempt attempt) {
  std::atomic<bool> inside{false}, done{false};
  std::thread other([&] {
    capture.run([&] {
      inside = true;
      while (!done) std::this_thread::yield();
    });
  });
  struct Finish {
    std::atomic<bool>& done;
    std::thread& other;
    ~Finish() {
      done = true;
      other.join();
    }
  } finish{done, other};
  while (!inside) std::this_thread::yield();
  attempt();
}

}  // namespace tapegrad::testing
