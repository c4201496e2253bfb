#include "examples/attention_study/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nn/atomic_file.h"
#include "examples/attention_study/bar_chart.h"
#include "examples/attention_study/format.h"
#include "examples/attention_study/heatmap.h"
#include "examples/attention_study/html.h"
#include "examples/attention_study/line_chart.h"
#include "examples/attention_study/png.h"
#include "examples/attention_study/tables.h"

namespace tapegrad::attention_study {

using nn::write_file_atomic;

namespace {

namespace fs = std::filesystem;

constexpr Rgb kEncoderSelfColour{68, 119, 170};
constexpr Rgb kDecoderSelfColour{238, 119, 51};
constexpr Rgb kDecoderCrossColour{34, 136, 51};
constexpr Rgb kAttentionColour{68, 119, 170};
constexpr Rgb kFfnColour{170, 51, 119};
constexpr Rgb kNormColour{150, 150, 150};
constexpr Rgb kOtherColour{102, 204, 238};

Rgb kind_colour(AttentionKind kind) {
  if (kind == AttentionKind::kEncoderSelf) return kEncoderSelfColour;
  return kind == AttentionKind::kDecoderSelf ? kDecoderSelfColour : kDecoderCrossColour;
}

std::string token_label(Index token) {
  if (token == copy_task::kStart) return "s";
  if (token == copy_task::kPad) return "-";
  return std::to_string(token);
}

std::vector<std::string> token_labels(const IndexArray& tokens, std::size_t b) {
  std::vector<std::string> out;
  for (std::size_t s = 0; s < tokens.shape()[1]; ++s) out.push_back(token_label(tokens(b, s)));
  return out;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

// Full precision for the machine-read manifest.
std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string file_stem(const AttentionMaps& maps) {
  std::string stem = maps.short_name;
  std::replace(stem.begin(), stem.end(), ' ', '_');
  return stem;
}

// "decoder layer 0: source-target attention"
std::string layer_title(const AttentionMaps& maps) {
  return stack_name(maps.kind) + " layer " + std::to_string(maps.layer) + ": " + attention_name(maps.kind);
}

// The two heatmaps of (maps, head, sequence b): written to maps/, described in the manifest,
// returned as figures.
std::vector<Figure> write_map_pair(const fs::path& dir, const AttentionMaps& maps, std::size_t head, std::size_t b,
                                   int cell, std::string& manifest) {
  const auto& shape = maps.weights.shape();
  const std::size_t rows = shape[2], cols = shape[3];
  HeatmapSpec spec;
  spec.row_labels = token_labels(maps.query_tokens, b);
  spec.col_labels = token_labels(maps.key_tokens, b);
  spec.row_axis = "query";
  spec.col_axis = "key";
  double max_weight = 0, max_grad = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const bool masked = !maps.may_attend.may_attend()(b, i, j);
      spec.masked.push_back(masked);
      if (masked) continue;
      max_weight = std::max(max_weight, double(maps.weights(b, head, i, j)));
      max_grad = std::max(max_grad, std::fabs(double(maps.grad(b, head, i, j))));
    }
  }
  const bool any_masked = std::find(spec.masked.begin(), spec.masked.end(), true) != spec.masked.end();
  const std::string where = "head " + std::to_string(head) + "  sequence " + std::to_string(b);
  const std::string stem = "maps/" + file_stem(maps) + "_h" + std::to_string(head) + "_s" + std::to_string(b);
  const std::string what =
      html_escape(layer_title(maps)) + ", head " + std::to_string(head) + ", sequence " + std::to_string(b);
  const std::string masked_note = any_masked ? " Grey: masked (that query may not attend to that key)." : "";

  std::vector<Figure> figures;
  const auto emit = [&](const std::string& kind, ColourScale scale, double lo, double hi, const std::string& subtitle,
                        const std::string& caption) {
    spec.title = {layer_title(maps), where + "  " + subtitle};
    spec.scale = scale;
    spec.lo = lo;
    spec.hi = hi;
    spec.values.clear();
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j)
        spec.values.push_back(kind == "weights" ? maps.weights(b, head, i, j) : maps.grad(b, head, i, j));
    HeatmapGeometry g;
    const Image image = render_heatmap(spec, cell, &g);
    const std::string file = stem + "_" + kind + ".png";
    write_png(dir / file, image);
    manifest += file + "," + kind + "," + maps.module + "," + std::to_string(head) + "," + std::to_string(b) + "," +
                std::to_string(rows) + "," + std::to_string(cols) + "," + std::to_string(g.grid_x) + "," +
                std::to_string(g.grid_y) + "," + std::to_string(g.cell) + "," + exact(lo) + "," + exact(hi) + "\n";
    figures.push_back({file, layer_title(maps) + " " + where + " " + subtitle,
                       "<b>" + what + ", " + subtitle + ".</b> " + caption + masked_note});
  };
  emit("weights", ColourScale::kSequential, 0.0, max_weight, "weights A",
       "Rows: query tokens, columns: key tokens; each row sums to 1. Viridis from 0 (dark purple) to " +
           short_number(max_weight) + " (yellow), this map's largest weight.");
  emit("grad", ColourScale::kDiverging, -max_grad, max_grad, "gradient dL/dA",
       "Red: raising that weight would raise the loss; blue: would lower it; white: 0. Symmetric scale &plusmn;" +
           short_number(max_grad) + ", this map's largest |dL/dA|.");
  return figures;
}

Section attention_section(const fs::path& dir, const AttentionMaps& maps, const StudyResult& study, int cell,
                          std::string& manifest) {
  Section section;
  section.id = file_stem(maps);
  section.heading = layer_title(maps);
  std::string& body = section.body_html;
  if (maps.kind == AttentionKind::kEncoderSelf) {
    body = "<p>Queries and keys are the source tokens. ";
  } else if (maps.kind == AttentionKind::kDecoderSelf) {
    body =
        "<p>Queries and keys are the decoder's input tokens (the target shifted right, starting with s); the causal "
        "mask lets query i attend to keys 0..i only. ";
  } else {
    body =
        "<p>Queries are the decoder's input tokens; keys are the source tokens (the encoder's output at those "
        "positions). ";
  }
  body += "Module <code>" + html_escape(maps.module) +
          "</code>. Token s is the start symbol; numbers are token ids.</p>\n<ul>\n";
  for (std::size_t b = 0; b < maps.weights.shape()[0]; ++b) {
    body += "<li>sequence " + std::to_string(b) + ": queries <code>" + joined(token_labels(maps.query_tokens, b)) +
            "</code>, keys <code>" + joined(token_labels(maps.key_tokens, b)) + "</code></li>\n";
  }
  body += "</ul>\n";
  for (std::size_t h = 0; h < maps.weights.shape()[1]; ++h) {
    FigureGroup group;
    for (const auto& n : study.heads) {
      if (n.module == maps.module && n.head == h) {
        group.heading_html = "Head " + std::to_string(h) + " &mdash; |dL/dA| = " + short_number(n.weights_grad) +
                             ", |dL/dscores| = " + short_number(n.scores_grad);
      }
    }
    for (std::size_t b = 0; b < maps.weights.shape()[0]; ++b) {
      for (auto& f : write_map_pair(dir, maps, h, b, cell, manifest)) group.figures.push_back(std::move(f));
    }
    section.groups.push_back(std::move(group));
  }
  return section;
}

// "encoder.encoder_layers.0.ffn" -> "enc0 ffn"; other names unchanged.
std::string short_sublayer(const std::string& name) {
  for (const std::string stack : {"encoder", "decoder"}) {
    const std::string prefix = stack + "." + stack + "_layers.";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "0.ffn"
    const auto dot = rest.find('.');
    return stack.substr(0, 3) + rest.substr(0, dot) + " " + rest.substr(dot + 1);
  }
  return name;
}

Rgb sublayer_colour(const std::string& name) {
  if (name.find("layer_norm") != std::string::npos) return kNormColour;
  if (name.find("attention") != std::string::npos) return kAttentionColour;
  if (name.find("ffn") != std::string::npos) return kFfnColour;
  return kOtherColour;
}

Section gradient_section(const fs::path& dir, const StudyResult& study) {
  BarChartSpec heads{"gradient norm reaching each head: |dL/dA|",
                     "|dL/dA| over may-attend cells, all sequences",
                     {},
                     {{"encoder self", kEncoderSelfColour},
                      {"decoder self", kDecoderSelfColour},
                      {"decoder cross", kDecoderCrossColour}}};
  for (const auto& h : study.heads) {
    heads.bars.push_back({h.short_name + " h" + std::to_string(h.head), h.weights_grad, kind_colour(h.kind)});
  }
  write_png(dir / "grad_norms_heads.png", render_bar_chart(heads));

  BarChartSpec sublayers{"gradient norm of the parameters of each sublayer",
                         "|dL/dparameters|",
                         {},
                         {{"attention", kAttentionColour},
                          {"ffn", kFfnColour},
                          {"layer norm", kNormColour},
                          {"embedding, generator", kOtherColour}}};
  for (const auto& s : study.sublayers) {
    sublayers.bars.push_back({short_sublayer(s.name), s.norm, sublayer_colour(s.name)});
  }
  write_png(dir / "grad_norms_sublayers.png", render_bar_chart(sublayers));

  const Table head_table = head_norms_table(study), module_table = module_norms_table(study),
              sublayer_table = sublayer_norms_table(study), ablation_table = head_ablation_table(study);
  write_file_atomic(dir / "head_ablation.csv", to_csv(ablation_table));
  write_file_atomic(dir / "grad_norms_heads.csv", to_csv(head_table));
  write_file_atomic(dir / "grad_norms_modules.csv", to_csv(module_table));
  write_file_atomic(dir / "grad_norms_sublayers.csv", to_csv(sublayer_table));
  write_file_atomic(dir / "grad_norms.md", "# Gradient norms\n\nLoss on the study batch: " + short_number(study.loss) +
                                               "\n\n## Per head\n\n" + to_markdown(head_table) +
                                               "\n## Per attention module\n\n" + to_markdown(module_table) +
                                               "\n## Per sublayer (parameters)\n\n" + to_markdown(sublayer_table) +
                                               "\n## Head ablation (A of the head := 0)\n\n" + to_markdown(ablation_table));

  Section section;
  section.id = "gradient-norms";
  section.heading = "Gradient norms";
  section.body_html =
      "<p>Norms of the gradient of the study batch's loss. Per head: |dL/dA| over the cells the mask lets attend "
      "(a masked weight is 0 and its gradient reaches nothing), |dL/dscores| the part that passes through the "
      "softmax, and the gradient of the head's own projection matrices. The Transformer does not expose its "
      "sublayer outputs, so the gradient reaching a sublayer is measured on its parameters. Tables: "
      "<a href=\"grad_norms_heads.csv\">heads (CSV)</a>, <a href=\"grad_norms_modules.csv\">attention modules "
      "(CSV)</a>, <a href=\"grad_norms_sublayers.csv\">sublayers (CSV)</a>, <a href=\"grad_norms.md\">all "
      "(Markdown)</a>.</p>\n";
  section.groups.push_back(
      {"",
       {{"grad_norms_heads.png", "bar chart of the gradient norm reaching each head",
         "|dL/dA| per head, over the batch's sequences; colour = kind of attention."},
        {"grad_norms_sublayers.png", "bar chart of the gradient norm of each sublayer's parameters",
         "Gradient norm of each sublayer's parameters; colour = kind of sublayer."}}});
  section.footer_html = "<h3>Per head</h3>\n" + html_table(head_table.header, head_table.rows) +
                        "<h3>Per attention module</h3>\n" + html_table(module_table.header, module_table.rows) +
                        "<h3>Per sublayer</h3>\n" + html_table(sublayer_table.header, sublayer_table.rows) +
                        "<h3>Head ablation</h3>\n<p>The loss with one head's attention weights set to 0, and its "
                        "change from the clean loss (<a href=\"head_ablation.csv\">CSV</a>).</p>\n" +
                        html_table(ablation_table.header, ablation_table.rows);
  return section;
}

Section loss_section(const fs::path& dir, const RunInfo& run) {
  Section section;
  section.id = "training-loss";
  section.heading = "Training loss";
  if (run.losses.empty()) {
    section.body_html = "<p>The model was loaded from a checkpoint (" + html_escape(run.source) +
                        "); a checkpoint holds no loss history, so there is no loss curve.</p>\n";
    return section;
  }
  const std::size_t window = std::max<std::size_t>(1, run.losses.size() / 20);
  std::vector<double> mean;
  double sum = 0;
  for (std::size_t i = 0; i < run.losses.size(); ++i) {
    sum += run.losses[i] - (i >= window ? run.losses[i - window] : 0.0);
    mean.push_back(sum / static_cast<double>(std::min(i + 1, window)));
  }
  const LineChartSpec chart{"training loss per step",
                            "step",
                            "loss",
                            {{"loss of each batch", {160, 190, 230}, run.losses, 1},
                             {"mean of the last " + std::to_string(window) + " steps", {33, 102, 172}, mean, 2}}};
  write_png(dir / "loss.png", render_line_chart(chart));
  section.body_html = "<p>Mean cross-entropy per target token of each training batch (" +
                      std::to_string(run.config.batch) + " sequences), first step " +
                      short_number(run.losses.front()) + ", last " + short_number(run.losses.back()) + ".</p>\n";
  section.groups.push_back({"",
                            {{"loss.png", "line chart of the training loss per step",
                              "Training loss per step (light) and its running mean (dark)."}}});
  return section;
}

std::string intro(const RunInfo& run, const StudyResult& study) {
  const auto& c = run.config;
  const std::size_t sequences = study.maps.empty() ? 0 : study.maps.front().weights.shape()[0];
  std::vector<std::vector<std::string>> rows = {
      {"model", std::to_string(c.layers) + " encoder and " + std::to_string(c.layers) + " decoder layers, d_model " +
                    std::to_string(c.d_model) + ", d_ff " + std::to_string(c.d_ff) + ", " + std::to_string(c.heads) +
                    " heads"},
      {"task", "copy task: vocabulary " + std::to_string(c.vocab) + ", sequences of " + std::to_string(c.seq_len) +
                   " tokens (s then " + std::to_string(c.seq_len - 1) + " random ones)"},
      {"model source", run.source},
      {"optimiser steps", std::to_string(run.steps)},
      {"exact-match accuracy", short_number(100.0 * run.accuracy) + "% of " + std::to_string(run.accuracy_sequences) +
                                   " fresh sequences (greedy decoding)"},
      {"study batch", std::to_string(sequences) + " sequences, loss " + short_number(study.loss) +
                          " (mean cross-entropy per target token)"},
  };
  return "<p>Attention maps of a copy-task Transformer and the gradient of the loss with respect to them, for one "
         "batch run under a GradientTape.</p>\n" +
         html_table({}, rows, "facts") +
         "<p>How to read the maps: each attention module has a section, each head a row of pictures, each sequence of "
         "the batch a pair: the attention weights A (viridis: dark purple 0, yellow the map's largest weight) and the "
         "gradient of the batch's loss with respect to them, dL/dA (blue negative, white 0, red positive, symmetric "
         "around 0). Rows are query tokens, columns key tokens. Only differences within a row of dL/dA pass through "
         "the softmax, dL/dscores = A (dL/dA &minus; &sum;<sub>k</sub> A dL/dA): a gradient that is the same across a "
         "row changes nothing.</p>\n";
}

}  // namespace

void write_report(const fs::path& dir, const RunInfo& run, const StudyResult& study) {
  fs::create_directories(dir / "maps");
  Page page{"Attention study", intro(run, study), {}};
  page.sections.push_back(loss_section(dir, run));
  page.sections.push_back(gradient_section(dir, study));
  std::string manifest = "file,kind,module,head,sequence,rows,cols,grid_x,grid_y,cell,lo,hi\n";
  for (const auto& maps : study.maps) page.sections.push_back(attention_section(dir, maps, study, run.cell, manifest));
  write_file_atomic(dir / "maps.csv", manifest);
  write_file_atomic(dir / "index.html", render_page(page));
}

}  // namespace tapegrad::attention_study
