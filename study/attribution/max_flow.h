#pragma once
// Maximum flow in a small directed graph with real capacities (Dinic's algorithm): attention
// flow (study/attribution/attention_flow.h) solves one problem per (output, input) token pair on
// the same graph, so the capacities are kept and each max_flow call starts from zero flow.
//
// Cost of one call: O(V² E) worst case (Dinic), far less on attention flow's layered graphs,
// where every augmenting path crosses each layer once.
#include <cstddef>
#include <vector>

namespace tapegrad::study::detail {

class MaxFlow {
 public:
  explicit MaxFlow(std::size_t nodes);

  // An edge from -> to with capacity >= 0 (the caller checks). Parallel edges add up.
  void add_edge(std::size_t from, std::size_t to, double capacity);

  // The value of a maximum flow from source to sink. Residual capacities below `tolerance`
  // count as saturated, so rounding cannot make Dinic chase ever smaller augmenting paths.
  double max_flow(std::size_t source, std::size_t sink, double tolerance = 1e-14);

 private:
  struct Edge {
    std::size_t to;
    std::size_t reverse;  // index of the paired edge in edges_[to]
    double capacity;
    double flow;
  };
  bool build_levels(std::size_t source, std::size_t sink, double tolerance);
  double push(std::size_t node, std::size_t sink, double limit, double tolerance);

  std::vector<std::vector<Edge>> edges_;
  std::vector<int> level_;
  std::vector<std::size_t> next_edge_;  // Dinic's current-arc pointers
};

}  // namespace tapegrad::study::detail
