#pragma once
// Edge patching: what the connection from one sender to one receiver carries, through the
// residual stream. A sender adds to the stream (a sublayer's hook_<sublayer>_out, one attention
// head's share of it, or an embedding: a stack's first hook_resid_pre); a receiver reads from it
// (an attention module's hook_q_input, hook_k_input or hook_v_input, including the decoder's
// cross-attention keys and values that read the encoder's output, or one head's share of such an
// input: what that head's query, key or value projection reads; or the model's last residual).
//
// Exact (path patching; Wang et al. 2022, Goldowsky-Dill et al. 2023): the receiver's input is
// recomputed with every sender's output frozen at the target run's, except this sender's, taken
// from the source; the target run then runs with only that receiver's input replaced (for one
// head's receiver, only that head's slice of the projected queries, keys or values). The change
// reaches the receiver by the direct path alone (through the stream and the layer norms on it),
// not through any other sender. One forward per sender and one per edge.
//
// Edge attribution patching (EAP; Syed et al. 2023): the first-order estimate of that effect,
//   eap(s -> r) = (source_s - target_s) . J_{s->r}^T d metric / d r,
// with J_{s->r} the Jacobian of r in s through the frozen graph (the layer norms' at the target
// run; for one head's receiver, d metric / d r is that head's slice of d metric / d q (or k, v)
// pulled back through its projection); with ig_steps = m (EAP-IG; Hanna et al. 2024) d metric / d r is its mean over m runs with
// the interpolate_at points moved from the target towards the source (integrated_patching.h). The
// cost: a forward and backward of the target (m of them for EAP-IG), one forward of the frozen
// graph, and one backward per receiver through it (the residual path only, not the sublayers).
// Receivers split into heads multiply the backwards by the heads.
//
//   const auto senders = study::edge_senders(model, /*heads=*/true);
//   const auto receivers = study::edge_receivers(model, /*heads=*/false);
//   const auto clean = study::run_with_cache<float>(model, run_clean, study::edge_points(senders, receivers));
//   const auto eap = study::attribute_edges<float>(model, run_corrupted, clean, senders, receivers);
//   const auto exact = study::patch_edges<float>(model, run_corrupted, clean, senders, study::edges_of(eap));
//
// Only connected edges are listed: a receiver the sender's output reaches through the frozen
// graph (found from what the tape recorded, not from the values). Paths through points that are
// not among the senders stay live in both methods: list every sender (edge_senders) for the
// usual circuit graph.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "study/run_with_cache.h"

namespace tapegrad::study {

struct EdgeSender {
  std::string out;     // the point through which it adds to the residual stream
  std::string result;  // empty, or the hook_result of the attention module behind `out`: one head
  std::size_t head = 0;
  // `out`, or "<attention module>.head<h>" for one head.
  std::string name() const;
};

struct EdgeReceiver {
  // NOLINTNEXTLINE(google-explicit-constructor): a path reads as its whole receiver
  EdgeReceiver(std::string input, std::optional<std::size_t> head = std::nullopt)
      : input(std::move(input)), head(head) {}

  std::string input;  // a hook point reading the residual stream
  // All of `input`, or, for an attention module's hook_q_input, hook_k_input or hook_v_input, one
  // head's share of it: what that head's slice of the module's hook_q, hook_k or hook_v reads.
  std::optional<std::size_t> head;
  // `input`, or "<input>.head<h>" for one head.
  std::string name() const;
  bool operator==(const EdgeReceiver&) const = default;
};

struct Edge {
  EdgeSender sender;
  EdgeReceiver receiver;
};

struct EdgeEffect {
  Edge edge;
  double effect = 0;  // the metric's change: exact (patch_edges) or estimated (attribute_edges)
};

struct EdgeTable {
  double target_metric = 0;
  double source_metric = 0;
  std::vector<EdgeEffect> rows;  // senders in the order given, each with its receivers in order
};

struct EdgeAttributionOptions {
  std::size_t ig_steps = 0;                      // 0: EAP; m > 0: EAP-IG with m midpoint steps
  std::vector<std::string> interpolate_at = {};  // EAP-IG's moved points (the source caches them)
};

// The senders of an nn::transformer model: each stack's embedding (its first layer's
// hook_resid_pre) and every hook_<sublayer>_out, in named_hook_points() order; with `heads`, an
// attention sublayer's output is split into its heads (the module whose hook_result sums to it:
// the one named like the sublayer, or the layer's one attention module).
template <class T>
std::vector<EdgeSender> edge_senders(nn::Module<T>& model, bool heads);

// Every attention module's hook_q_input, hook_k_input and hook_v_input, and the last
// hook_resid_after_<sublayer> (the decoder's output, what the generator reads), in
// named_hook_points() order; with `heads`, an attention module's inputs are split into its heads.
template <class T>
std::vector<EdgeReceiver> edge_receivers(nn::Module<T>& model, bool heads);

// The points a source cache needs for these senders and receivers (outs, head results, receivers'
// inputs and projections).
std::vector<std::string> edge_points(const std::vector<EdgeSender>& senders, const std::vector<EdgeReceiver>& receivers);

// The edges of a table, in its order.
std::vector<Edge> edges_of(const EdgeTable& table);

// The estimates (EAP or EAP-IG) of every connected edge. ValueError naming attribute_edges for no
// senders or receivers, an unknown point, a point the target run reaches other than once, a
// receiver that is also a sender's out or is named twice (or whole and split into heads), a head
// past the module's heads, a receiver's head on a point that is not an attention input, heads
// that do not sum to their out, active dropout, EAP-IG given steps without points (or points
// without steps), or a source without the senders' points (or EAP-IG's interpolate_at);
// ShapeError when the source's tensors are not the target run's shapes.
template <class T>
EdgeTable attribute_edges(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                          const std::vector<EdgeSender>& senders, const std::vector<EdgeReceiver>& receivers,
                          const EdgeAttributionOptions& options = {});

// The exact effect of patching each of `edges` (path patching), every sender's out frozen (the
// same senders as attribute_edges', so the two mean the same edge). The errors of attribute_edges
// naming patch_edges, and ValueError for an edge whose sender is not among `senders`. An edge
// that is not connected gets 0.
template <class T>
EdgeTable patch_edges(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                      const std::vector<EdgeSender>& senders, const std::vector<Edge>& edges);

}  // namespace tapegrad::study
