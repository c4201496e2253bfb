#include "examples/attention_study/report_data.h"

#include <algorithm>
#include <span>

#include "autograd/base/errors.h"
#include "examples/attention_study/format.h"
#include "examples/attention_study/json.h"
#include "examples/attention_study/tables.h"

namespace tapegrad::attention_study {

namespace {

// A JSON string of the base64 of the values as float32.
std::string floats(const xt::xarray<float>& values) {
  return json_string(base64_float32(std::span<const float>(values.data(), values.size())));
}

std::string strings(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& s : items) out.push_back(json_string(s));
  return json_array(out);
}

// [[label, ...] per sequence]
std::string token_rows(const IndexArray& tokens) {
  std::vector<std::string> rows;
  for (std::size_t b = 0; b < tokens.shape()[0]; ++b) {
    std::vector<std::string> row;
    for (std::size_t s = 0; s < tokens.shape()[1]; ++s) row.push_back(token_label(tokens(b, s)));
    rows.push_back(strings(row));
  }
  return json_array(rows);
}

std::string call_json(const AttentionMaps& maps) {
  const auto& shape = maps.weights.shape();
  // One bit a cell, least significant first: an eighth of a byte a cell, which leaves room on the
  // page at seq 64 (its size grows with seq^2).
  const auto& mask = maps.may_attend.may_attend();
  std::vector<std::uint8_t> mask_bytes((mask.size() + 7) / 8, 0);
  std::size_t cell = 0;
  for (const bool may : mask) {
    if (may) mask_bytes[cell / 8] |= static_cast<std::uint8_t>(1u << (cell % 8));
    ++cell;
  }
  return json_object({{"name", json_string(maps.short_name)},
                      {"module", json_string(maps.module)},
                      {"batch", std::to_string(shape[0])},
                      {"heads", std::to_string(shape[1])},
                      {"seq_q", std::to_string(shape[2])},
                      {"seq_k", std::to_string(shape[3])},
                      {"query_tokens", token_rows(maps.query_tokens)},
                      {"key_tokens", token_rows(maps.key_tokens)},
                      {"mask", json_string(base64(mask_bytes))},
                      {"A", floats(maps.weights)},
                      {"S", floats(maps.scores)},
                      {"dA", floats(maps.grad)},
                      {"dS", floats(maps.scores_grad)}});
}

const xt::xarray<float>& checked(const xt::xarray<float>& array, const AttentionMaps& maps, std::size_t step,
                                 const char* what) {
  if (array.shape() != maps.weights.shape()) {
    throw ShapeError("write_report: snapshots: the " + std::string(what) + " of '" + maps.module + "' at step " +
                     std::to_string(step) + " is " + format_shape(array.shape()) + ", the study's is " +
                     format_shape(maps.weights.shape()) + " (snapshots must be recorded on the study batch)");
  }
  return array;
}

std::string snapshot_json(const study::AttentionSnapshot& snapshot, const StudyResult& study) {
  std::vector<std::string> calls;
  for (const auto& maps : study.maps) {
    const auto at = std::find(snapshot.names.begin(), snapshot.names.end(), maps.module);
    if (at == snapshot.names.end()) {
      std::string names;
      for (const auto& n : snapshot.names) names += (names.empty() ? "'" : ", '") + n + "'";
      throw ValueError("write_report: snapshots: the snapshot at step " + std::to_string(snapshot.step) +
                       " has no attention call '" + maps.module + "' (it has " + names + ")");
    }
    const std::size_t i = static_cast<std::size_t>(at - snapshot.names.begin());
    if (i >= snapshot.weights.size() || i >= snapshot.weights_grad.size()) {
      throw ValueError("write_report: snapshots: the snapshot at step " + std::to_string(snapshot.step) + " has " +
                       std::to_string(snapshot.names.size()) + " names but " + std::to_string(snapshot.weights.size()) +
                       " weights and " + std::to_string(snapshot.weights_grad.size()) + " gradients");
    }
    calls.push_back(json_object({{"A", floats(checked(snapshot.weights[i], maps, snapshot.step, "weights"))},
                                 {"dA", floats(checked(snapshot.weights_grad[i], maps, snapshot.step, "dL/dA"))}}));
  }
  return json_object({{"step", std::to_string(snapshot.step)},
                      {"loss", json_number(snapshot.loss)},
                      {"calls", json_array(calls)}});
}

// heat_from: the page colours the numbers of this column and the ones after it as a heatmap
// (blue-white-red, 0 white); -1 for none.
std::string table_json(const std::string& id, const std::string& title, const std::string& caption,
                       const Table& table, int heat_from = -1) {
  std::vector<std::string> rows;
  for (const auto& r : table.rows) rows.push_back(strings(shown_cells(r)));
  return json_object({{"id", json_string(id)},
                      {"title", json_string(title)},
                      {"caption", json_string(caption)},
                      {"header", strings(table.header)},
                      {"rows", json_array(rows)},
                      {"heat_from", std::to_string(heat_from)}});
}

std::string facts(const RunInfo& run, const StudyResult& study) {
  const auto& c = run.config;
  const std::size_t sequences = study.maps.empty() ? 0 : study.maps.front().weights.shape()[0];
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"model", std::to_string(c.layers) + " encoder and " + std::to_string(c.layers) + " decoder layers, d_model " +
                    std::to_string(c.d_model) + ", d_ff " + std::to_string(c.d_ff) + ", " + std::to_string(c.heads) +
                    " heads"},
      {"task", "copy task: vocabulary " + std::to_string(c.vocab) + ", sequences of " + std::to_string(c.seq_len) +
                   " tokens (s then " + std::to_string(c.seq_len - 1) + " random ones); token s = start symbol"},
      {"model source", run.source},
      {"optimiser steps", std::to_string(run.steps)},
      {"exact-match accuracy", short_number(100.0 * run.accuracy) + "% of " + std::to_string(run.accuracy_sequences) +
                                   " fresh sequences (greedy decoding)"},
      {"study batch", std::to_string(sequences) + " sequences" +
                          (run.batch_source.empty() ? "" : " (" + run.batch_source + ")") + ", loss " +
                          short_number(study.loss) +
                          " (mean cross-entropy per target token); softmax-backward checks " +
                          (study.checks_passed ? "passed" : "FAILED")},
      {"L, the metric", metric_name(study.metric) + " = " + short_number(study.metric_value) +
                            ": every gradient on this page (dL/dA, dL/dS, the norms, the gradient-weighted maps) "
                            "is of it (--metric, --metric-position)"},
  };
  std::vector<std::string> out;
  for (const auto& [label, text] : rows) out.push_back(strings({label, text}));
  return json_array(out);
}

// The cell sweep: its shape, the shares as float32 [heads, seq_q, seq_k] (exact and AtP), AtP's
// agreement, and a note saying what was swept or why not.
std::string cells_json(const CellSweep& sweep) {
  const Table table = cell_table(sweep);
  xt::xarray<float> exact = xt::zeros<float>({table.rows.size()}), atp = exact;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    exact(i) = static_cast<float>(std::get<double>(table.rows[i][4]));
    atp(i) = static_cast<float>(std::get<double>(table.rows[i][5]));
  }
  const study::Agreement& a = sweep.agreement;
  return json_object({{"name", json_string(sweep.name)},
                      {"module", json_string(sweep.module)},
                      {"heads", std::to_string(sweep.swept ? sweep.heads : 0)},
                      {"seq_q", std::to_string(sweep.queries)},
                      {"seq_k", std::to_string(sweep.keys)},
                      {"exact", floats(exact)},
                      {"atp", floats(atp)},
                      {"agreement", json_object({{"compared", std::to_string(a.compared)},
                                                 {"pearson", json_number(a.pearson)},
                                                 {"spearman", json_number(a.spearman)},
                                                 {"top_k_recall", json_number(a.top_k_recall)},
                                                 {"k", std::to_string(a.k)}})},
                      {"note", json_string(cell_sweep_summary(sweep))}});
}

}  // namespace

std::string token_label(Index token) {
  if (token == copy_task::kStart) return "s";
  if (token == copy_task::kPad) return "-";
  return std::to_string(token);
}

std::string report_json(const RunInfo& run, const StudyResult& study,
                        const std::vector<study::AttentionSnapshot>& snapshots, const CircuitStudy* circuit) {
  std::vector<std::string> calls, snaps, attributions, losses;
  for (const auto& maps : study.maps) calls.push_back(call_json(maps));
  for (const auto& s : snapshots) snaps.push_back(snapshot_json(s, study));
  for (const auto& a : study.attributions) {
    attributions.push_back(json_object({{"name", json_string(a.name)},
                                        {"description", json_string(a.description)},
                                        {"seq", std::to_string(a.values.shape()[1])},
                                        {"tokens", token_rows(a.tokens)},
                                        {"values", floats(a.values)}}));
  }
  for (const double l : run.losses) losses.push_back(json_number(l));
  std::vector<std::string> tables = {
      table_json("ablation", "Head ablation",
                 "The study batch's loss with one head's A set to 0, and its change from the clean loss " +
                     short_number(study.ablation.clean_loss) + " (head_ablation.csv).",
                 head_ablation_table(study)),
      table_json("heads", "Gradient norms per head",
                 "Over the may-attend cells of every sequence; W_q, W_k, W_v: the head's slice of the projection "
                 "gradients (grad_norms_heads.csv).",
                 head_norms_table(study)),
      table_json("modules", "Gradient norms per attention call", "grad_norms_modules.csv",
                 module_norms_table(study)),
      table_json("sublayers", "Gradient norms per sublayer",
                 "Norm of the gradient of each sublayer's parameters (grad_norms_sublayers.csv).",
                 sublayer_norms_table(study)),
  };
  if (circuit) {
    tables.insert(
        tables.begin(),
        {table_json("circuit", "Which heads carry the copy: patching, exact and by gradients",
                    "Each row patches one head's z, q or k from the study batch into a corrupted copy (every token "
                    "replaced); the cells are the share of the gap in L' = logit(clean token) - logit(corrupted "
                    "token), " + short_number(circuit->clean_metric) + " clean against " +
                        short_number(circuit->corrupted_metric) + " corrupted, that patching it recovers, exactly "
                    "and as each method estimates it; GradDrop estimates its magnitude (circuit.csv, docs/patching.md).",
                    circuit_table(*circuit), /*heat_from=*/3),
         table_json("patching_methods", "Each method against exact patching",
                    "Correlation with the exact shares over every row above, the share of the exact top k among the "
                    "method's top k, and the time the method took (patching_methods.csv).",
                    method_agreement_table(*circuit)),
         table_json("edges", "Which edges carry the copy: path patching, exact and by gradients",
                    "Each row patches one edge, a sender's output into a receiver's input through the residual "
                    "stream alone (every other sender frozen), from the study batch into the corrupted copy; the "
                    "cells are the share of the same gap the edge recovers, exactly and as EAP and EAP-IG estimate "
                    "it (edges.csv, docs/patching.md). The graph above draws the largest.",
                    edge_table(circuit->edges, circuit->clean_metric - circuit->corrupted_metric), /*heat_from=*/2),
         table_json("edge_methods", "Edge methods against exact path patching",
                    "Over every edge above (edge_methods.csv).", edge_method_table(circuit->edges)),
         table_json("positions", "Where the copy lives in the residual stream: patching one position",
                    "Each cell patches the residual stream entering a layer (or leaving a stack) at one position, "
                    "in every sequence, from the study batch into the corrupted copy: the share of the same gap "
                    "it recovers (positions.csv; positions_atp.csv has AtP's estimates).",
                    position_table(circuit->positions, circuit->clean_metric - circuit->corrupted_metric, false),
                    /*heat_from=*/1)});
  }
  std::vector<std::pair<std::string, std::string>> members = {
      {"facts", facts(run, study)},
      {"percentile", json_number(kScalePercentile)},
      {"calls", json_array(calls)},
      {"snapshots", json_array(snaps)},
      {"attributions", json_array(attributions)},
      {"tables", json_array(tables)},
      {"losses", json_array(losses)},
      {"no_loss_note", json_string("The model was loaded from a checkpoint (" + run.source +
                                   "); a checkpoint holds no loss history, so there is no loss curve.")}};
  if (circuit) members.emplace_back("cells", cells_json(circuit->cells));
  return json_object(members);
}

}  // namespace tapegrad::attention_study
