#pragma once
// Registered callbacks (a tensor's gradient hooks, a module's forward and output-gradient hooks,
// an attention module's probes) are kept in registration order as (id, callback) pairs, and
// removed by the id their registration returned. These make the ids and find them.
#include <algorithm>
#include <cstdint>
#include <utility>

namespace tapegrad {

// A fresh id, unique across the process (every tensor, module and element type), so an id given
// by one object never removes another's callback. Thread-safe.
std::uint64_t next_callback_id();

// Appends (a fresh id, callback) to entries and returns the id.
template <class Entries, class Callback>
std::uint64_t add_callback(Entries& entries, Callback&& callback) {
  entries.emplace_back(next_callback_id(), std::forward<Callback>(callback));
  return entries.back().first;
}

// Erases the entry with that id; false when entries has none (the caller's message names it).
template <class Entries>
bool remove_callback(Entries& entries, std::uint64_t id) {
  const auto it = std::find_if(entries.begin(), entries.end(), [id](const auto& entry) { return entry.first == id; });
  if (it == entries.end()) return false;
  entries.erase(it);
  return true;
}

}  // namespace tapegrad
