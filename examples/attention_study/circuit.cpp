#include "examples/attention_study/circuit.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "autograd/ops/reduce.h"
#include "nn/copy_task/copy_task.h"
#include "study/attention_sites.h"
#include "study/metrics.h"
#include "study/patch_source.h"

namespace tapegrad::attention_study {

namespace {

// The model's inputs as EAP-IG interpolates them: the embeddings, as the first layers read them.
const std::vector<std::string> kInputPoints = {"encoder.encoder_layers.0.hook_resid_pre",
                                               "decoder.decoder_layers.0.hook_resid_pre"};

// The copy metric of `data` through the model, teacher-forced: the mean logit difference between
// the tokens `correct` and `wrong` continue with (study::score_difference on the log-probabilities).
study::RunLoss<float> copy_metric(nn::transformer::Transformer<float>& model, copy_task::Batch batch,
                                  const IndexArray& correct, const IndexArray& wrong) {
  return [&model, batch, correct, wrong] {
    const Tensor<float> out = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask);
    return study::score_difference(model.generator(out), correct, wrong);
  };
}

// The attention module whose heads' z patches recover the most of the gap, summed over its heads.
std::string module_carrying_most(const study::PatchTable& exact) {
  std::map<std::string, double> recovered;
  for (const auto& row : exact.rows) {
    const auto [module, point] = study::module_and_point(row.point);
    if (point == "hook_z") recovered[module] += exact.recovered(row);
  }
  return std::max_element(recovered.begin(), recovered.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

}  // namespace

CopyRuns copy_runs(nn::transformer::Transformer<float>& model, const IndexArray& data, std::size_t vocab,
                   std::uint64_t seed) {
  Generator gen(seed);
  const copy_task::Batch clean = copy_task::make_batch(data);
  const copy_task::Batch corrupted = copy_task::make_batch(copy_task::corrupt_sequences(data, vocab, gen));
  return {copy_metric(model, clean, clean.tgt_out, corrupted.tgt_out),
          copy_metric(model, corrupted, clean.tgt_out, corrupted.tgt_out)};
}

CircuitStudy circuit_study(nn::transformer::Transformer<float>& model, const IndexArray& data, std::size_t vocab,
                           std::uint64_t seed, const StudyResult& names) {
  model.eval();
  const auto [run_clean, run_corrupted] = copy_runs(model, data, vocab, seed);

  CircuitStudy circuit;
  std::vector<std::string> points = kInputPoints;  // cached for EAP-IG on inputs, not patched
  const std::size_t inputs = points.size();
  for (const char* point : {"hook_z", "hook_q", "hook_k"}) {
    for (const auto& [module, attention] : study::named_attention_modules(model)) {
      points.push_back(module + "." + point);
      for (std::size_t h = 0; h < attention->attention_heads(); ++h)
        circuit.row_names.push_back(head_name(names.short_name_of(module), h) + " " + std::string(point).substr(5));
    }
  }
  const auto source = study::run_with_cache(model, run_clean, points);
  points.erase(points.begin(), points.begin() + static_cast<std::ptrdiff_t>(inputs));
  circuit.clean_metric = source.metric;
  circuit.comparison = study::compare_patching_methods(
      model, run_corrupted, source, points, /*axis=*/1,
      {.grad_drop_layers = study::layer_output_points(model), .ig_inputs = kInputPoints});
  circuit.corrupted_metric = circuit.comparison.exact.target_metric;
  circuit.atp_check = atp_diagnostic(model, run_corrupted, source, circuit.comparison);
  circuit.edges = edge_circuit(model, run_clean, run_corrupted, kInputPoints, names, /*receivers_per_head=*/false);
  circuit.edges_per_head = edge_circuit(model, run_clean, run_corrupted, kInputPoints, names, /*receivers_per_head=*/true);
  circuit.positions = position_sweep(model, run_clean, run_corrupted);
  const std::string module = module_carrying_most(circuit.comparison.exact);
  circuit.cells = cell_sweep(model, run_clean, run_corrupted, module, names.short_name_of(module));
  return circuit;
}

Table circuit_table(const CircuitStudy& circuit) {
  Table t{{"name", "point", "head", "exact"}, {}};
  for (const auto& method : circuit.comparison.methods) t.header.push_back(method.method);
  const auto& exact = circuit.comparison.exact;
  for (std::size_t i = 0; i < exact.rows.size(); ++i) {
    std::vector<Cell> row = {circuit.row_names[i], exact.rows[i].point, std::to_string(exact.rows[i].index),
                             circuit.recovered(exact.rows[i].metric - exact.target_metric)};
    for (const auto& method : circuit.comparison.methods) row.push_back(circuit.recovered(method.estimates[i]));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table method_agreement_table(const CircuitStudy& circuit) {
  Table t{{"method", "seconds", "Pearson", "Spearman", "top-k recall", "k"}, {}};
  t.rows.push_back({"exact patching", circuit.comparison.exact_seconds, "", "", "", ""});
  for (const auto& m : circuit.comparison.methods) {
    t.rows.push_back({m.method, m.seconds, m.agreement.pearson, m.agreement.spearman, m.agreement.top_k_recall,
                      std::to_string(m.agreement.k)});
  }
  return t;
}

}  // namespace tapegrad::attention_study
