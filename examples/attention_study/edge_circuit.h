#pragma once
// The copy-task circuit as a graph: which connections between components carry the copy, by
// exact path patching of every edge and by EAP and EAP-IG (study/edge_patching.h), on the same
// clean and corrupted runs and metric as the head study (circuit.h). Senders are each head, each
// feed-forward sublayer and the two embeddings; receivers each attention module's q, k and v
// inputs (or, per head, each head's share of them) and the decoder's output.
#include <string>
#include <vector>

#include "examples/attention_study/study.h"
#include "examples/attention_study/tables.h"
#include "study/edge_patching.h"
#include "study/patching_agreement.h"

namespace tapegrad::attention_study {

struct EdgeCircuit {
  // per row: "dec1 cross h2", and "dec1 cross q" (per head: "dec1 cross h2 q")
  std::vector<std::string> sender_names, receiver_names;
  study::EdgeTable exact, eap, eap_ig;
  double exact_seconds = 0, eap_seconds = 0, eap_ig_seconds = 0;
  study::Agreement eap_agreement, eap_ig_agreement;  // against exact, over every edge
};

// `inputs`: the points EAP-IG interpolates (the embeddings); `names` the study's short names;
// `receivers_per_head`: each attention input split into its heads' shares.
EdgeCircuit edge_circuit(nn::transformer::Transformer<float>& model, const study::RunLoss<float>& run_clean,
                         const study::RunLoss<float>& run_corrupted, const std::vector<std::string>& inputs,
                         const StudyResult& names, bool receivers_per_head);

// sender, receiver, then the share of the gap (clean - corrupted metric) the edge recovers:
// exact, EAP, EAP-IG. Rows in the study's order (senders in forward order).
Table edge_table(const EdgeCircuit& edges, double gap);
// method, seconds, Pearson, Spearman, top-k recall, k: EAP and EAP-IG against exact path patching.
Table edge_method_table(const EdgeCircuit& edges);

}  // namespace tapegrad::attention_study
