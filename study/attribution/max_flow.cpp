#include "study/attribution/max_flow.h"

#include <algorithm>
#include <limits>
#include <queue>

namespace tapegrad::study::detail {

MaxFlow::MaxFlow(std::size_t nodes) : edges_(nodes), level_(nodes), next_edge_(nodes) {}

void MaxFlow::add_edge(std::size_t from, std::size_t to, double capacity) {
  edges_[from].push_back({to, edges_[to].size() + (from == to ? 1 : 0), capacity, 0.0});
  edges_[to].push_back({from, edges_[from].size() - 1, 0.0, 0.0});
}

// Breadth-first levels over edges with residual capacity; true when the sink is reachable.
bool MaxFlow::build_levels(std::size_t source, std::size_t sink, double tolerance) {
  std::fill(level_.begin(), level_.end(), -1);
  level_[source] = 0;
  std::queue<std::size_t> queue;
  queue.push(source);
  while (!queue.empty()) {
    const std::size_t node = queue.front();
    queue.pop();
    for (const Edge& e : edges_[node]) {
      if (level_[e.to] < 0 && e.capacity - e.flow > tolerance) {
        level_[e.to] = level_[node] + 1;
        queue.push(e.to);
      }
    }
  }
  return level_[sink] >= 0;
}

// Pushes up to `limit` along level-increasing residual paths (a blocking flow, depth first).
double MaxFlow::push(std::size_t node, std::size_t sink, double limit, double tolerance) {
  if (node == sink) return limit;
  for (std::size_t& i = next_edge_[node]; i < edges_[node].size(); ++i) {
    Edge& e = edges_[node][i];
    if (level_[e.to] != level_[node] + 1 || e.capacity - e.flow <= tolerance) continue;
    const double pushed = push(e.to, sink, std::min(limit, e.capacity - e.flow), tolerance);
    if (pushed > 0.0) {
      e.flow += pushed;
      edges_[e.to][e.reverse].flow -= pushed;
      return pushed;
    }
  }
  return 0.0;
}

double MaxFlow::max_flow(std::size_t source, std::size_t sink, double tolerance) {
  for (auto& list : edges_)
    for (Edge& e : list) e.flow = 0.0;
  if (source == sink) return 0.0;
  double total = 0.0;
  while (build_levels(source, sink, tolerance)) {
    std::fill(next_edge_.begin(), next_edge_.end(), 0);
    while (const double pushed = push(source, sink, std::numeric_limits<double>::infinity(), tolerance)) {
      total += pushed;
    }
  }
  return total;
}

}  // namespace tapegrad::study::detail
