#include "autograd/base/callback_ids.h"

#include <atomic>

namespace tapegrad {

std::uint64_t next_callback_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tapegrad
