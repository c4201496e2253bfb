#include "autograd/memory/step_capture.h"

#include <new>

#include "autograd/memory/step_arena.h"
#include "autograd/base/errors.h"

namespace tapegrad {

StepCapture::StepCapture() = default;
StepCapture::~StepCapture() { detail::release_recycled_mappings(); }

StepCapture::Running::Running(StepCapture& capture) : capture_(capture) {
  if (detail::step_memory_in_use()) {
    throw TapeError("StepCapture::run: a captured step is already running on this thread; "
                           "run one step at a time (a step may not run another captured step)");
  }
  if (capture_.running_.exchange(true)) {
    throw TapeError("StepCapture::run: this capture is running a step on another thread; "
                           "give each thread its own StepCapture");
  }
  capture_.begin_step();
}

StepCapture::Running::~Running() {
  if (!finished_) capture_.end_step(false);
  capture_.running_.store(false);
}

void StepCapture::begin_step() {
  if (stats_.gave_up) return;
  if (replay_ == nullptr) {
    recording_ = std::make_unique<detail::StepRecording>();
    detail::set_step_memory(recording_.get(), nullptr);
    return;
  }
  replay_->begin_step();
  detail::set_step_memory(nullptr, replay_.get());
}

void StepCapture::end_step(bool finished) {
  if (stats_.gave_up) return;
  detail::set_step_memory(nullptr, nullptr);
  detail::captured_step_ended();
  if (recording_ != nullptr) {
    std::vector<detail::RecordedBlock> blocks = recording_->finish();
    recording_.reset();
    if (!finished) return;  // record again next time
    ++stats_.recorded_steps;
    const detail::ArenaPlan plan = detail::plan_arena(blocks);
    try {
      replay_ = std::make_unique<detail::StepReplay>(std::move(blocks), plan);
    } catch (const std::bad_alloc&) {
      stats_.gave_up = true;  // no address space for an arena: eager from now on
      return;
    }
    stats_.arena_bytes = replay_->arena_bytes();
    stats_.planned_blocks = replay_->planned_blocks();
    detail::return_free_heap_to_system();
    return;
  }
  const detail::ReplayCounts& counts = replay_->counts();
  stats_.arena_allocations += counts.arena;
  stats_.heap_allocations += counts.heap;
  if (finished && replay_->followed_plan()) {
    ++stats_.replayed_steps;
    consecutive_rerecords_ = 0;
    return;
  }
  ++stats_.diverged_steps;
  replay_.reset();  // the arena goes once its last block is freed
  if (++consecutive_rerecords_ > kMaxConsecutiveRerecords) {
    stats_.gave_up = true;
    detail::release_recycled_mappings();  // its steps end no more: they would not age out
  }
}

StepCaptureStats StepCapture::stats() const { return stats_; }

}  // namespace tapegrad
