#include "examples/attention_study/edge_circuit.h"

#include <algorithm>
#include <chrono>

#include "study/patch_source.h"

namespace tapegrad::attention_study {

namespace {

constexpr std::size_t kTopK = 10;
constexpr std::size_t kIgSteps = 8;

// Seconds that `compute` took.
template <class F>
double timed(double& seconds, F&& compute) {
  const auto start = std::chrono::steady_clock::now();
  compute();
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds;
}

// "encoder.encoder_layers.1.hook_ffn_out" -> "enc1 ffn"; a first layer's hook_resid_pre -> "enc emb".
std::string layer_point_name(const std::string& path) {
  const std::string stack = path.starts_with("encoder.") ? "enc" : path.starts_with("decoder.") ? "dec" : "";
  const auto [layer_path, point] = study::module_and_point(path);
  if (stack.empty()) return path;
  if (point == "hook_resid_pre") return stack + " emb";
  const std::string layer = layer_path.substr(layer_path.rfind('.') + 1);
  if (point.starts_with("hook_resid_after_")) return stack + layer + " output";
  if (point.starts_with("hook_") && point.ends_with("_out")) return stack + layer + " " + point.substr(5, point.size() - 9);
  return path;
}

std::string sender_name(const study::EdgeSender& sender, const StudyResult& names) {
  if (sender.result.empty()) return layer_point_name(sender.out);
  return head_name(names.short_name_of(study::module_and_point(sender.result).first), sender.head);
}

// "<module short name> q|k|v" ("<module short name> h<head> q|k|v" for one head's share), or the
// residual point's name.
std::string receiver_name(const study::EdgeReceiver& receiver, const StudyResult& names) {
  const auto [module, point] = study::module_and_point(receiver.input);
  for (const char* input : {"q", "k", "v"}) {
    if (point != std::string("hook_") + input + "_input") continue;
    const std::string& reader = names.short_name_of(module);
    return (receiver.head ? head_name(reader, *receiver.head) : reader) + " " + input;
  }
  return layer_point_name(receiver.input);
}

std::vector<double> effects(const study::EdgeTable& table) {
  std::vector<double> out;
  for (const auto& row : table.rows) out.push_back(row.effect);
  return out;
}

}  // namespace

EdgeCircuit edge_circuit(nn::transformer::Transformer<float>& model, const study::RunLoss<float>& run_clean,
                         const study::RunLoss<float>& run_corrupted, const std::vector<std::string>& inputs,
                         const StudyResult& names, bool receivers_per_head) {
  const auto senders = study::edge_senders(model, /*heads=*/true);
  const auto receivers = study::edge_receivers(model, receivers_per_head);
  std::vector<std::string> points = study::edge_points(senders, receivers);
  for (const std::string& input : inputs)
    if (std::find(points.begin(), points.end(), input) == points.end()) points.push_back(input);
  const auto source = study::run_with_cache(model, run_clean, points);

  EdgeCircuit circuit;
  timed(circuit.eap_seconds, [&] { circuit.eap = study::attribute_edges(model, run_corrupted, source, senders, receivers); });
  timed(circuit.eap_ig_seconds, [&] {
    circuit.eap_ig = study::attribute_edges(model, run_corrupted, source, senders, receivers,
                                            {.ig_steps = kIgSteps, .interpolate_at = inputs});
  });
  timed(circuit.exact_seconds,
        [&] { circuit.exact = study::patch_edges(model, run_corrupted, source, senders, study::edges_of(circuit.eap)); });
  for (const auto& row : circuit.exact.rows) {
    circuit.sender_names.push_back(sender_name(row.edge.sender, names));
    circuit.receiver_names.push_back(receiver_name(row.edge.receiver, names));
  }
  const std::vector<double> exact = effects(circuit.exact);
  circuit.eap_agreement = study::agreement(effects(circuit.eap), exact, kTopK);
  circuit.eap_ig_agreement = study::agreement(effects(circuit.eap_ig), exact, kTopK);
  return circuit;
}

Table edge_table(const EdgeCircuit& edges, double gap) {
  Table t{{"sender", "receiver", "exact", "EAP", "EAP-IG"}, {}};
  for (std::size_t i = 0; i < edges.exact.rows.size(); ++i) {
    t.rows.push_back({edges.sender_names[i], edges.receiver_names[i], edges.exact.rows[i].effect / gap,
                      edges.eap.rows[i].effect / gap, edges.eap_ig.rows[i].effect / gap});
  }
  return t;
}

Table edge_method_table(const EdgeCircuit& edges) {
  Table t{{"method", "seconds", "Pearson", "Spearman", "top-k recall", "k"}, {}};
  t.rows.push_back({"exact path patching", edges.exact_seconds, "", "", "", ""});
  const auto add = [&](const char* method, double seconds, const study::Agreement& a) {
    t.rows.push_back({method, seconds, a.pearson, a.spearman, a.top_k_recall, std::to_string(a.k)});
  };
  add("EAP", edges.eap_seconds, edges.eap_agreement);
  add("EAP-IG (8 steps, inputs)", edges.eap_ig_seconds, edges.eap_ig_agreement);
  return t;
}

}  // namespace tapegrad::attention_study
