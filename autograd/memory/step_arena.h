#pragma once
// The memory side of StepCapture (autograd/memory/step_capture.h): what serves every array's bytes
// (detail::allocate_array_bytes, autograd/memory/array_allocator.h) while a step runs on this thread.
//
// - StepRecording: arrays are served off the plan (the heap when small, a mapping of their own
//   when large), and each one's size and lifetime (in allocations) is written down.
// - StepReplay: the i-th allocation of the step gets block i of an arena planned from a
//   recording (detail::plan_arena), if it asks for the recorded size and the block's range is
//   free; otherwise off the plan. A different size means the step is not the recorded one: the
//   rest of it runs off the plan, and the replay says so (followed_plan()).
//
// A range is free unless a block the plan expected dead by now is still alive: an array the
// caller kept from an earlier step, or past the recorded lifetime. Those are checked, so a replay
// never hands out memory in use, whatever the caller does.
//
// Arenas, and large arrays off the plan, are mapped inside one address range reserved for them
// at first use, so freeing any array (on any thread) tells them from a heap block with one
// comparison. An arena lives until its capture is gone and its last block is freed.
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "autograd/memory/arena_plan.h"

namespace tapegrad::detail {

struct ArenaStorage;

class StepRecording {
 public:
  StepRecording();
  ~StepRecording();
  StepRecording(const StepRecording&) = delete;
  StepRecording& operator=(const StepRecording&) = delete;

  void* allocate(std::size_t bytes);
  // An array was freed (on any thread): if recorded here, its lifetime ends now.
  void note_free(void* p);
  // The blocks, in allocation order; those not freed yet outlived the step.
  std::vector<RecordedBlock> finish();

 private:
  std::mutex mutex_;
  std::unordered_map<void*, std::size_t> alive_;
  std::vector<RecordedBlock> blocks_;
};

struct ReplayCounts {
  std::size_t arena = 0;  // allocations served from the arena
  std::size_t heap = 0;   // the others: outlived the recording, range in use, or diverged
};

class StepReplay {
 public:
  // Throws std::bad_alloc if the arena cannot be mapped.
  StepReplay(std::vector<RecordedBlock> blocks, const ArenaPlan& plan);
  ~StepReplay();  // the arena itself stays until its last block is freed
  StepReplay(const StepReplay&) = delete;
  StepReplay& operator=(const StepReplay&) = delete;

  void begin_step();
  void* allocate(std::size_t bytes);
  // Whether the step made exactly the recorded allocations.
  bool followed_plan() const;
  std::size_t arena_bytes() const;
  std::size_t planned_blocks() const { return by_expected_free_.size(); }
  const ReplayCounts& counts() const { return counts_; }  // of the step since begin_step

 private:
  bool range_in_use(std::size_t block);

  std::vector<RecordedBlock> blocks_;
  std::vector<std::size_t> offsets_;
  ArenaStorage* storage_;
  std::vector<std::size_t> by_expected_free_;  // arena blocks, by freed_before
  std::size_t next_ = 0;                        // the step's next allocation
  std::size_t free_cursor_ = 0;                 // into by_expected_free_
  std::vector<std::size_t> late_;               // arena blocks alive past their recorded lifetime
  bool diverged_ = false;
  ReplayCounts counts_;
};

// Where this thread's arrays come from until reset: a recording or a replay (not both), or the
// heap when both are null. A StepCapture sets it around its step.
void set_step_memory(StepRecording* recording, StepReplay* replay);
bool step_memory_in_use();

// Mappings in the reserved range alive at once (arenas, and large arrays off the plan), at most.
// Each splits the range into two more kernel mappings (VMAs), of which a process may have 65530 by
// default (vm.max_map_count): past that, every mmap in the process fails, thread stacks and other
// libraries' included. A quarter of them is the limit; beyond it, arrays come from the heap.
inline constexpr std::size_t kMaxArenaMappings = 8192;
// How many there are now.
std::size_t arena_mappings();

// Mappings made in the reserved range over the process's life.
std::size_t arena_mappings_made();

// A captured step ended (recorded or replayed, of any capture on any thread): the mappings of large
// arrays freed by replayed steps, kept for the same sizes asked again (in step_arena.cpp,
// ArenaStorage), are unmapped once a whole step passed without taking them.
// release_recycled_mappings unmaps them all (a capture's end, or its giving up).
void captured_step_ended();
void release_recycled_mappings();

// Hands freed heap memory back to the system (glibc's malloc_trim), after a recording step.
void return_free_heap_to_system();

}  // namespace tapegrad::detail
