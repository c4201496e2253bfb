#pragma once
// The data of the study page (page.h) as one JSON object, drawn by page.js:
//   facts        [[label, text], ...]: the model, the run, the study batch
//   percentile   the diverging colour scales end at this percentile of |value| (kScalePercentile)
//   calls        per attention call in forward order: name (the module's short name; a head is
//                "<name> h<head>", head_name), module, batch, heads, seq_q, seq_k, query_tokens and
//                key_tokens [batch][seq] as labels, mask (base64 of bits [batch, seq_q, seq_k], 8 a
//                byte, least significant first; 1 = may attend), A, S, dA, dS (base64 float32
//                [batch, heads, seq_q, seq_k])
//   snapshots    per training snapshot: step, loss, calls [{A, dA}] in the order of `calls` (not
//                S and dL/dS, which would double the page: snapshots.safetensors has them)
//   attributions per map: name, description, seq, tokens, values (base64 float32 [batch, seq, seq])
//   tables       per table: id, title, caption, header, rows (strings)
//   losses       training loss per step ([] when the model was loaded), no_loss_note
//   cells        with a circuit study, its cell sweep (cell_sweep.h): name, module, heads (0 when
//                skipped), seq_q, seq_k, exact and atp (base64 float32 [heads, seq_q, seq_k], the
//                share of the gap each cell recovers), agreement {compared, pearson, spearman,
//                top_k_recall, k}, note (one sentence: what was swept, or why not)
#include <string>
#include <vector>

#include "examples/attention_study/report.h"
#include "study/attention_snapshot.h"

namespace tapegrad::attention_study {

// The shared dL/dA, dL/dS and S colour scales are symmetric around 0 with this limit, a high
// percentile of |value| over the may-attend cells of every head (the largest few outliers would
// otherwise wash every other cell out to white).
inline constexpr double kScalePercentile = 99;

// "s" for the start symbol, "-" for padding, the token id otherwise.
std::string token_label(Index token);

// Snapshots must hold every attention call of the study under its name (AttentionRecord::name)
// with the study's shapes (they are recorded on the study batch): ValueError naming the snapshot's
// step and the missing call, ShapeError naming both shapes otherwise.
// With a circuit study, its two tables join the page's, the circuit's coloured as a heatmap.
std::string report_json(const RunInfo& run, const StudyResult& study,
                        const std::vector<study::AttentionSnapshot>& snapshots, const CircuitStudy* circuit = nullptr);

}  // namespace tapegrad::attention_study
