#include "autograd/memory/step_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <new>

#include "autograd/memory/array_allocator.h"
#include "autograd/memory/malloc_policy.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tapegrad::detail {
namespace {

// Heap arrays. glibc's aligned allocation (memalign, behind the aligned operator new) takes the
// arena's lock and splits a free chunk on every call, where malloc serves small blocks from a
// per-thread cache (glibc 2.36; memalign gained that cache in 2.38): most of the allocator's time
// in a step of small ops. So an array starts at the first 64-byte boundary at least 8 bytes into
// a malloc'ed block 64 bytes longer, and the 8 bytes before it hold malloc's pointer. Under
// AddressSanitizer the aligned operator new stays, so that the array's own bounds are checked.
constexpr std::size_t kHeapAlignment = ArrayAllocator<std::byte>::alignment;

void* heap_allocate(std::size_t bytes) {
  // No object is larger than PTRDIFF_MAX bytes; the check also keeps the padding below (and
  // libstdc++'s own rounding to the alignment) from wrapping the size.
  if (bytes > static_cast<std::size_t>(PTRDIFF_MAX)) throw std::bad_alloc();
#if defined(TAPEGRAD_UNDER_ASAN)
  return ::operator new(bytes, std::align_val_t{kHeapAlignment});
#else
  void* block = std::malloc(bytes + kHeapAlignment);
  if (block == nullptr) throw std::bad_alloc();
  const std::uintptr_t start =
      (reinterpret_cast<std::uintptr_t>(block) + sizeof(void*) + kHeapAlignment - 1) & ~(kHeapAlignment - 1);
  // With malloc's block aligned to at least 8 bytes, the boundary lies at most 64 bytes in.
  static_assert(alignof(std::max_align_t) >= sizeof(void*), "the array and its pointer fit in the block");
  auto* array = reinterpret_cast<void**>(start);
  array[-1] = block;
  return array;
#endif
}

// Unsized: clang before 19 does not declare sized deallocation functions by default.
void heap_deallocate(void* p) noexcept {
#if defined(TAPEGRAD_UNDER_ASAN)
  ::operator delete(p, std::align_val_t{kHeapAlignment});
#else
  if (p != nullptr) std::free(static_cast<void**>(p)[-1]);
#endif
}

// The address range every arena is mapped in: reserved (PROT_NONE, no memory committed) on the
// first arena, never released. 64 GiB of address space, far beyond any step this machine can hold.
constexpr std::size_t kArenaSpaceBytes = std::size_t{64} << 30;
constexpr std::size_t kArenaGranule = std::size_t{2} << 20;  // mappings start and end on 2 MiB
constexpr std::size_t kPage = 4096;
std::atomic<std::uintptr_t> arena_space_begin{0};
std::atomic<std::size_t> arena_space_bytes{0};

bool in_arena_space(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) - arena_space_begin.load(std::memory_order_relaxed) <
         arena_space_bytes.load(std::memory_order_relaxed);
}

std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }

// First fit over the free parts of the reserved range (offset -> length), in whole granules so
// that every mapping starts on a 2 MiB boundary; only the pages asked for are mapped. Arenas come
// and go once per recording, large arrays off the plan a few times a step: a mutex and a map are
// plenty.
class ArenaSpace {
 public:
  // Maps `bytes` rounded up to pages; with huge_pages, asks for 2 MiB pages (an arena: every byte
  // is touched every step, and they save TLB misses; the kernel's transparent huge pages are
  // often "madvise" only). That request is a hint: its failure is ignored.
  std::byte* map(std::size_t bytes, bool huge_pages) {
    if (bytes > kArenaSpaceBytes) return nullptr;  // (also keeps the rounding below from wrapping)
    const std::size_t granules = round_up(bytes, kArenaGranule);
    std::lock_guard lock(mutex_);
    if (mappings_ == kMaxArenaMappings && !recycled_.empty()) {
      unmap_locked(recycled_.back().at, recycled_.back().bytes);
      recycled_.pop_back();
    }
    if (mappings_ == kMaxArenaMappings || !reserve()) return nullptr;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < granules) continue;
      const auto [offset, length] = *it;
      free_.erase(it);
      if (length > granules) free_.emplace(offset + granules, length - granules);
      std::byte* at = begin() + offset;
      const std::size_t mapped = round_up(bytes, kPage);
      if (::mmap(at, mapped, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
        give_back(offset, granules);
        return nullptr;
      }
      if (huge_pages) ::madvise(at, mapped, MADV_HUGEPAGE);
      ++mappings_;
      ++mappings_made_;
      return at;
    }
    return nullptr;
  }
  std::size_t mappings() {
    std::lock_guard lock(mutex_);
    return mappings_;
  }
  std::size_t mappings_made() {
    std::lock_guard lock(mutex_);
    return mappings_made_;
  }
  // Drops the pages of what map(bytes) mapped at `at` (back to PROT_NONE, nothing committed) and
  // frees the range.
  void unmap(std::byte* at, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    unmap_locked(at, bytes);
  }

  // Keeps what map(bytes) mapped at `at`, pages and all, for take_recycled: a mapping freed by a
  // replayed step, most likely asked for again, at the same size, by the next step.
  void recycle(std::byte* at, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    recycled_.push_back({at, bytes, false});
  }
  // A kept mapping of as many pages as map(bytes) would map, or null. unmap rounds the caller's
  // size to the same pages and granules as the size it was mapped with.
  std::byte* take_recycled(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    for (auto it = recycled_.begin(); it != recycled_.end(); ++it) {
      if (round_up(it->bytes, kPage) != round_up(bytes, kPage)) continue;
      std::byte* at = it->at;
      recycled_.erase(it);
      return at;
    }
    return nullptr;
  }
  // At the end of a captured step: unmaps the kept mappings that a whole step did not take.
  void age_recycled() {
    std::lock_guard lock(mutex_);
    std::erase_if(recycled_, [&](Recycled& kept) {
      if (!kept.idle_a_step) {
        kept.idle_a_step = true;
        return false;
      }
      unmap_locked(kept.at, kept.bytes);
      return true;
    });
  }
  void release_recycled() {
    std::lock_guard lock(mutex_);
    for (const Recycled& kept : recycled_) unmap_locked(kept.at, kept.bytes);
    recycled_.clear();
  }

 private:
  std::byte* begin() const { return reinterpret_cast<std::byte*>(arena_space_begin.load(std::memory_order_relaxed)); }
  bool reserve() {
    if (arena_space_bytes.load(std::memory_order_relaxed) != 0) return true;
    // One granule more than used, so that every arena starts on a 2 MiB boundary.
    void* at = ::mmap(nullptr, kArenaSpaceBytes + kArenaGranule, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (at == MAP_FAILED) return false;
    const auto aligned = (reinterpret_cast<std::uintptr_t>(at) + kArenaGranule - 1) / kArenaGranule * kArenaGranule;
    arena_space_begin.store(aligned, std::memory_order_relaxed);
    arena_space_bytes.store(kArenaSpaceBytes, std::memory_order_relaxed);
    free_.emplace(0, kArenaSpaceBytes);
    return true;
  }
  void give_back(std::size_t offset, std::size_t bytes) {
    auto it = free_.emplace(offset, bytes).first;
    if (auto next = std::next(it); next != free_.end() && offset + bytes == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      if (auto prev = std::prev(it); prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  void unmap_locked(std::byte* at, std::size_t bytes) {
    ::mmap(at, round_up(bytes, kPage), PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    give_back(static_cast<std::size_t>(at - begin()), round_up(bytes, kArenaGranule));
    --mappings_;
  }

  struct Recycled {
    std::byte* at;
    std::size_t bytes;
    bool idle_a_step;  // kept at the end of a captured step already
  };

  std::mutex mutex_;
  std::map<std::size_t, std::size_t> free_;
  std::size_t mappings_ = 0;       // recycled ones included
  std::size_t mappings_made_ = 0;  // over the process's life
  std::vector<Recycled> recycled_;
};

ArenaSpace& arena_space() {
  static ArenaSpace space;
  return space;
}

// The recordings in progress on any thread: a heap block freed anywhere may be one of theirs.
std::mutex recordings_mutex;
std::vector<StepRecording*> recordings;
std::atomic<std::size_t> recordings_in_progress{0};

thread_local StepRecording* this_thread_recording = nullptr;
thread_local StepReplay* this_thread_replay = nullptr;

}  // namespace

// Shared by the replay that owns it and every block it handed out that is still alive; or the
// mapping of one large array off the plan (allocate_off_plan), owned by that array alone.
struct ArenaStorage {
  std::byte* base = nullptr;
  std::size_t mapped = 0;
  bool one_array = false;  // a large array's own mapping, not an arena
  std::atomic<std::size_t> refs{1};
  std::unique_ptr<std::atomic<bool>[]> alive;  // per recorded block: handed out and not yet freed

  void release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (mapped != 0) give_back_mapping();
    delete this;
  }

 private:
  // A large array a replayed step frees on its thread (an attention map a module kept from the step
  // before) is most likely allocated again at the same size in the next step: its mapping is kept
  // for that one until the end of the next step (ArenaSpace::recycle). Unmapping and mapping again
  // cost the paper-size step 684 page faults, at 13 us each on a Zen 5 VM (bench/RESULTS.md, issue
  // 40). Anywhere else (outside a step, in a recording, on another thread) the pages go back at
  // once: a recording's freed arrays would not be asked for again.
  void give_back_mapping() noexcept {
    if (one_array && this_thread_replay != nullptr) {
      try {
        return arena_space().recycle(base, mapped);
      } catch (const std::bad_alloc&) {
      }
    }
    arena_space().unmap(base, mapped);
  }
};

namespace {

struct BlockHeader {
  ArenaStorage* storage;
  std::size_t index;
};
static_assert(sizeof(BlockHeader) <= kArenaBlockHeader);

void free_arena_block(void* p) noexcept {
  auto* header = reinterpret_cast<BlockHeader*>(static_cast<std::byte*>(p) - kArenaBlockHeader);
  ArenaStorage* storage = header->storage;
  storage->alive[header->index].store(false, std::memory_order_release);
  storage->release();
}

// What a capture serves outside its arena (every array while recording; in a replay, arrays that
// outlive the step, the rest of a diverged step, blocks whose range is still in use): from the
// heap when small, in a mapping of their own from glibc's default mmap threshold up. On the heap,
// a large array that outlives the step (Adam's moments made in the first step, an attention map
// a module keeps) would sit among the step's freed temporaries, and the holes it keeps open get
// touched again by later small allocations: 16 MiB of the paper step's steady peak RSS. The
// mapping goes back to the system when the array is freed (or serves the next step's array,
// ArenaStorage), and the heap never grows with the recording's arrays. (tapegrad's malloc policy
// turns glibc's own mmap of large blocks off, for the eager step's sake: page faults on every
// large temporary.)
constexpr std::size_t kOwnMappingBytes = std::size_t{128} << 10;

void* allocate_off_plan(std::size_t bytes) {
  // Past the reserved range's size, the heap says bad_alloc (and the header cannot wrap the size).
  if (bytes < kOwnMappingBytes || bytes > kArenaSpaceBytes) return heap_allocate(bytes);
  auto* storage = new ArenaStorage;
  storage->alive = std::make_unique<std::atomic<bool>[]>(1);
  storage->mapped = kArenaBlockHeader + bytes;
  storage->one_array = true;
  storage->base = arena_space().take_recycled(storage->mapped);
  if (storage->base == nullptr) storage->base = arena_space().map(storage->mapped, /*huge_pages=*/false);
  if (storage->base == nullptr) {
    delete storage;
    return heap_allocate(bytes);  // no address space or mapping left: the heap can still serve it
  }
  ::new (storage->base) BlockHeader{storage, 0};
  storage->alive[0].store(true, std::memory_order_relaxed);
  return storage->base + kArenaBlockHeader;
}

}  // namespace

StepRecording::StepRecording() {
  std::lock_guard lock(recordings_mutex);
  recordings.push_back(this);
  recordings_in_progress.fetch_add(1, std::memory_order_release);
}

StepRecording::~StepRecording() {
  std::lock_guard lock(recordings_mutex);
  recordings.erase(std::find(recordings.begin(), recordings.end(), this));
  recordings_in_progress.fetch_sub(1, std::memory_order_release);
}

void* StepRecording::allocate(std::size_t bytes) {
  void* p = allocate_off_plan(bytes);
  try {
    std::lock_guard lock(mutex_);
    alive_[p] = blocks_.size();
    blocks_.push_back({bytes, kOutlivedStep});
  } catch (...) {
    deallocate_array_bytes(p);
    throw;
  }
  return p;
}

void StepRecording::note_free(void* p) {
  std::lock_guard lock(mutex_);
  auto it = alive_.find(p);
  if (it == alive_.end()) return;
  blocks_[it->second].freed_before = blocks_.size();
  alive_.erase(it);
}

std::vector<RecordedBlock> StepRecording::finish() {
  std::lock_guard lock(mutex_);
  alive_.clear();
  return std::move(blocks_);
}

StepReplay::StepReplay(std::vector<RecordedBlock> blocks, const ArenaPlan& plan)
    : blocks_(std::move(blocks)), offsets_(plan.offsets), storage_(new ArenaStorage) {
  storage_->alive = std::make_unique<std::atomic<bool>[]>(blocks_.size());
  if (plan.arena_bytes != 0) {
    const std::size_t mapped = round_up(plan.arena_bytes, kArenaGranule);
    storage_->base = arena_space().map(mapped, /*huge_pages=*/true);
    if (storage_->base == nullptr) {
      delete storage_;
      throw std::bad_alloc();
    }
    storage_->mapped = mapped;
  }
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    if (offsets_[i] != kOnHeap) by_expected_free_.push_back(i);
  }
  std::stable_sort(by_expected_free_.begin(), by_expected_free_.end(),
                   [&](std::size_t a, std::size_t b) { return blocks_[a].freed_before < blocks_[b].freed_before; });
}

StepReplay::~StepReplay() { storage_->release(); }

std::size_t StepReplay::arena_bytes() const { return storage_->mapped; }

void StepReplay::begin_step() {
  next_ = 0;
  free_cursor_ = 0;
  diverged_ = false;
  counts_ = {};
  late_.clear();
  for (std::size_t i : by_expected_free_) {
    if (storage_->alive[i].load(std::memory_order_acquire)) late_.push_back(i);
  }
}

bool StepReplay::followed_plan() const { return !diverged_ && next_ == blocks_.size(); }

bool StepReplay::range_in_use(std::size_t block) {
  const std::size_t begin = offsets_[block];
  const std::size_t end = begin + arena_footprint(blocks_[block]);
  for (std::size_t i = 0; i < late_.size();) {
    const std::size_t j = late_[i];
    if (!storage_->alive[j].load(std::memory_order_acquire)) {
      late_[i] = late_.back();
      late_.pop_back();
      continue;
    }
    if (offsets_[j] < end && begin < offsets_[j] + arena_footprint(blocks_[j])) return true;
    ++i;
  }
  return false;
}

void* StepReplay::allocate(std::size_t bytes) {
  const std::size_t k = next_++;
  if (!diverged_ && (k >= blocks_.size() || blocks_[k].bytes != bytes)) diverged_ = true;
  if (diverged_ || offsets_[k] == kOnHeap) {
    ++counts_.heap;
    return allocate_off_plan(bytes);
  }
  // The blocks the recording had freed by now: any still alive is late and may hold k's range.
  while (free_cursor_ < by_expected_free_.size() && blocks_[by_expected_free_[free_cursor_]].freed_before <= k) {
    const std::size_t j = by_expected_free_[free_cursor_++];
    if (storage_->alive[j].load(std::memory_order_acquire)) late_.push_back(j);
  }
  if (range_in_use(k)) {
    ++counts_.heap;
    return allocate_off_plan(bytes);
  }
  std::byte* header = storage_->base + offsets_[k];
  ::new (header) BlockHeader{storage_, k};
  storage_->alive[k].store(true, std::memory_order_relaxed);
  storage_->refs.fetch_add(1, std::memory_order_relaxed);
  ++counts_.arena;
  return header + kArenaBlockHeader;
}

std::size_t arena_mappings() { return arena_space().mappings(); }

void set_step_memory(StepRecording* recording, StepReplay* replay) {
  this_thread_recording = recording;
  this_thread_replay = replay;
}

void captured_step_ended() { arena_space().age_recycled(); }

void release_recycled_mappings() { arena_space().release_recycled(); }

std::size_t arena_mappings_made() { return arena_space().mappings_made(); }

bool step_memory_in_use() { return this_thread_recording != nullptr || this_thread_replay != nullptr; }

void return_free_heap_to_system() {
#if defined(__GLIBC__)
  if constexpr (kMallocPolicySupported) malloc_trim(0);
#endif
}

void* allocate_array_bytes(std::size_t bytes) {
  if (this_thread_replay != nullptr) [[unlikely]] return this_thread_replay->allocate(bytes);
  if (this_thread_recording != nullptr) [[unlikely]] return this_thread_recording->allocate(bytes);
  return heap_allocate(bytes);
}

void deallocate_array_bytes(void* p) noexcept {
  if (recordings_in_progress.load(std::memory_order_acquire) != 0) [[unlikely]] {
    std::lock_guard lock(recordings_mutex);
    for (StepRecording* recording : recordings) recording->note_free(p);
  }
  if (in_arena_space(p)) [[unlikely]] return free_arena_block(p);
  heap_deallocate(p);
}

}  // namespace tapegrad::detail
