#pragma once
// StepCapture: a training step with fixed shapes, recorded once and replayed from one arena.
//
//   tapegrad::StepCapture capture;
//   for (...) {
//     Tensor<float> loss = capture.run([&] { return train_step(batch); });  // forward, backward, optimiser
//   }
//
// run(step) calls step() on this thread, exactly as without capture: the same ops, the same
// kernels, the same results bit for bit. Only where arrays live changes:
// - the first call records the size and lifetime of every array the step allocates on this
//   thread, and plans one arena in which arrays alive at the same time never share bytes
//   (detail::plan_arena). Its arrays are served as outliving ones are (below), and freed heap
//   memory is then returned to the system;
// - later calls serve the step's i-th array from the arena's block i: no heap allocation per op,
//   and the step's memory is the plan's peak instead of the heap's high-water mark plus its holes.
//
// Arrays that outlive the step (parameters' gradients, optimiser state, what step returns) stay
// off the arena: small ones on the heap, large ones (from 128 KiB) each in a mapping of its own,
// so that they leave no holes in the heap and their pages go back to the system when freed.
// Freed by a replayed step (an attention map a module keeps until the next step), such a mapping is
// kept to serve an array of the same size until the end of the next step, so that an array remade
// every step is not page-faulted in again every step.
// Whatever the caller does, a replay never hands out memory still in use: an array kept from an
// earlier step, or kept past its recorded lifetime, keeps its bytes, and the array that would
// have shared them is served off the arena instead. An array may outlive the capture, and may be
// freed on any thread.
//
// When a step allocates differently from the recording (another shape, another branch), the rest
// of that step runs off the arena and the next call records again. Once more than
// kMaxConsecutiveRerecords replays in a row did not follow their plan, the capture stops planning
// and runs every step eagerly (stats().gave_up). A step that throws is rethrown; the next call
// records again.
//
// Only the calling thread's arrays are planned (TBB workers allocate from the heap). One run at a
// time per thread and per capture: run() inside a run(), or on a capture already running a step
// on another thread, throws TapeError. A capture may move between threads between steps.
#include <atomic>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace tapegrad {

namespace detail {
class StepRecording;
class StepReplay;
}  // namespace detail

struct StepCaptureStats {
  std::size_t recorded_steps = 0;
  std::size_t replayed_steps = 0;      // replays that followed their plan to the end
  std::size_t diverged_steps = 0;      // replays that allocated differently from their recording
  std::size_t arena_bytes = 0;         // the current arena (0 before the first plan)
  std::size_t planned_blocks = 0;      // arrays per step the current plan puts in the arena
  std::size_t arena_allocations = 0;   // over all replays: arrays served from an arena
  std::size_t heap_allocations = 0;    // over all replays: the others (heap, or their own mapping)
  bool gave_up = false;                // runs every step eagerly from now on
};

class StepCapture {
 public:
  static constexpr std::size_t kMaxConsecutiveRerecords = 3;

  StepCapture();
  ~StepCapture();
  StepCapture(const StepCapture&) = delete;
  StepCapture& operator=(const StepCapture&) = delete;

  template <class Step>
  std::invoke_result_t<Step&> run(Step&& step) {
    Running running(*this);
    if constexpr (std::is_void_v<std::invoke_result_t<Step&>>) {
      step();
      running.finished();
    } else {
      auto result = step();
      running.finished();
      return result;
    }
  }

  StepCaptureStats stats() const;

 private:
  // Routes this thread's arrays for the length of one step. A step that throws leaves without
  // finished(): its recording is dropped, its replay counts as diverged.
  class Running {
   public:
    explicit Running(StepCapture& capture);
    ~Running();
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
    // Plans the arena after a recording: may throw std::bad_alloc.
    void finished() {
      finished_ = true;
      capture_.end_step(true);
    }

   private:
    StepCapture& capture_;
    bool finished_ = false;
  };

  void begin_step();
  void end_step(bool finished);

  std::unique_ptr<detail::StepRecording> recording_;
  std::unique_ptr<detail::StepReplay> replay_;
  std::atomic<bool> running_{false};
  std::size_t consecutive_rerecords_ = 0;
  StepCaptureStats stats_;
};

}  // namespace tapegrad
