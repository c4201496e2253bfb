// Writes what tests/interop/pytorch_interop.py needs to check tapegrad against PyTorch: a float64
// copy-task Transformer checkpoint (safetensors, dotted names, Linear weights [out, in]), and one
// batch with tapegrad's log-probabilities, loss and every parameter gradient; and a corrupted copy
// of the batch with, for every head's z of every attention call, tapegrad's exact patching
// (study::patch_slices) and AtP (study::attribution_patch) of the clean z into the corrupted run,
// and for every edge (heads as senders) tapegrad's path patching (study::patch_edges) and EAP
// (study::attribute_edges), the edges listed in the metadata keys "edges" (into whole attention
// inputs) and "edges_per_head" (into each head's share of them).
//   export_copy_model OUT_DIR
#include <cstdio>
#include <filesystem>
#include <map>

#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"
#include "nn/copy_task/copy_task.h"
#include "nn/io/checkpoint.h"
#include "study/attention_sites.h"
#include "study/attribution_patching.h"
#include "study/edge_patching.h"
#include "study/metrics.h"

using namespace tapegrad;

namespace {
xt::xarray<double> as_double(const IndexArray& a) { return xt::xarray<double>(xt::cast<double>(a)); }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: export_copy_model OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  constexpr std::size_t vocab = 11, seq = 10, d_model = 16, d_ff = 32, heads = 4, layers = 2;
  Generator gen(5);
  nn::transformer::Transformer<double> model(vocab, vocab, seq, copy_task::kPad, d_model, layers, d_ff, heads, 0.0,
                                             1e-5, gen);
  model.eval();
  IndexArray data = copy_task::random_sequences(6, seq, vocab, gen);
  data(2, 8) = copy_task::kPad;  // one padded position: exercises the masks and ignore_index
  data(2, 9) = copy_task::kPad;
  const copy_task::Batch batch = copy_task::make_batch(data);

  GradientTape tape;
  const auto log_probs = model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask));
  IndexArray targets = batch.tgt_out;
  targets.reshape({targets.size()});
  const auto loss = cross_entropy(reshape(log_probs, {-1, static_cast<Index>(vocab)}), targets,
                                  {.ignore_index = copy_task::kPad});
  tape.backward(loss);

  nn::StateDict<double> expected{{"src", as_double(batch.src)},
                                 {"tgt_in", as_double(batch.tgt_in)},
                                 {"tgt_out", as_double(batch.tgt_out)},
                                 {"log_probs", log_probs.value()},
                                 {"loss", loss.value()}};
  for (const auto& [name, param] : model.named_parameters()) expected["grad." + name] = param.grad();
  // The corrupted copy keeps the padded positions (corrupt_sequences takes tokens only).
  IndexArray unpadded = data;
  unpadded(2, 8) = unpadded(2, 9) = 2;
  IndexArray corrupted_data = copy_task::corrupt_sequences(unpadded, vocab, gen);
  corrupted_data(2, 8) = corrupted_data(2, 9) = copy_task::kPad;
  const copy_task::Batch corrupted = copy_task::make_batch(corrupted_data);
  const auto metric_of = [&](const copy_task::Batch& b) -> study::RunLoss<double> {
    return [&model, &b, &batch, &corrupted] {
      return study::score_difference(model.generator(model(b.src, b.tgt_in, b.src_mask, b.tgt_mask)), batch.tgt_out,
                                     corrupted.tgt_out);
    };
  };
  std::vector<std::string> points;
  for (const auto& [module, attention] : study::named_attention_modules(model)) points.push_back(module + ".hook_z");
  const auto clean = study::run_with_cache(model, metric_of(batch), points);
  const auto exact = study::patch_slices(model, metric_of(corrupted), clean, points, 1);
  const auto atp = study::attribution_patch(model, metric_of(corrupted), clean, points, 1);
  expected["corrupted_src"] = as_double(corrupted.src);
  expected["corrupted_tgt_in"] = as_double(corrupted.tgt_in);
  expected["corrupted_tgt_out"] = as_double(corrupted.tgt_out);
  expected["patch.clean_metric"] = xt::xarray<double>({clean.metric});
  expected["patch.corrupted_metric"] = xt::xarray<double>({exact.target_metric});
  for (std::size_t p = 0; p < points.size(); ++p) {
    xt::xarray<double> patched = xt::zeros<double>({heads}), attributed = xt::zeros<double>({heads});
    for (std::size_t h = 0; h < heads; ++h) {
      patched(h) = exact.rows[p * heads + h].metric;
      attributed(h) = atp.rows[p * heads + h].atp;
    }
    expected["patch.exact." + points[p]] = patched;
    expected["patch.atp." + points[p]] = attributed;
  }
  // Edges: "<out>|<receiver>" or "<out>@<head>|<receiver>", ';'-separated, in the rows' order;
  // "edges" into whole attention inputs, "edges_per_head" into each head's share ("<input>.head<h>").
  std::map<std::string, std::string> listed;
  for (const bool per_head : {false, true}) {
    const std::string key = per_head ? "edges_per_head" : "edges";
    const auto senders = study::edge_senders(model, /*heads=*/true);
    const auto receivers = study::edge_receivers(model, per_head);
    const auto edge_clean = study::run_with_cache(model, metric_of(batch), study::edge_points(senders, receivers));
    const auto eap = study::attribute_edges(model, metric_of(corrupted), edge_clean, senders, receivers);
    const auto path_patched = study::patch_edges(model, metric_of(corrupted), edge_clean, senders, study::edges_of(eap));
    std::string& edges = listed[key];
    xt::xarray<double> exact_effects = xt::zeros<double>({eap.rows.size()}), eap_effects = exact_effects;
    for (std::size_t i = 0; i < eap.rows.size(); ++i) {
      const study::Edge& e = eap.rows[i].edge;
      edges += (i ? ";" : "") + e.sender.out + (e.sender.result.empty() ? "" : "@" + std::to_string(e.sender.head)) +
               "|" + e.receiver.name();
      exact_effects(i) = path_patched.rows[i].effect;
      eap_effects(i) = eap.rows[i].effect;
    }
    expected[key + ".exact"] = exact_effects;
    expected[key + ".eap"] = eap_effects;
  }
  nn::save_safetensors(out / "model.safetensors", model.state_dict(), {{"d_model", std::to_string(d_model)}});
  nn::save_safetensors(out / "expected.safetensors", expected,
                       {{"vocab", std::to_string(vocab)}, {"d_model", std::to_string(d_model)},
                        {"d_ff", std::to_string(d_ff)}, {"heads", std::to_string(heads)},
                        {"layers", std::to_string(layers)}, {"max_len", std::to_string(seq)}, {"pad", "0"},
                        {"edges", listed["edges"]}, {"edges_per_head", listed["edges_per_head"]}});
  std::printf("wrote %s and %s (loss %.12f)\n", (out / "model.safetensors").c_str(),
              (out / "expected.safetensors").c_str(), loss.item());
  return 0;
}
