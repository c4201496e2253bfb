#include "examples/attention_study/position_sweep.h"

#include <algorithm>

#include "study/patch_source.h"

namespace tapegrad::attention_study {

PositionSweep position_sweep(nn::transformer::Transformer<float>& model, const study::RunLoss<float>& run_clean,
                             const study::RunLoss<float>& run_corrupted) {
  PositionSweep sweep;
  // Each stack's layers' hook_resid_pre, then its last hook_resid_after_<sublayer>: named_hook_points
  // lists a stack's layers in order, the encoder's before the decoder's.
  std::string stack, last_out;
  std::size_t layer = 0;
  const auto close_stack = [&] {
    if (stack.empty()) return;
    sweep.points.push_back(last_out);
    sweep.names.push_back(stack + " out");
  };
  for (const auto& [path, point] : model.named_hook_points()) {
    const auto [module, name] = study::module_and_point(path);
    const std::string prefix = path.starts_with("encoder.") ? "enc" : path.starts_with("decoder.") ? "dec" : "";
    if (prefix.empty()) continue;
    if (name == "hook_resid_pre") {
      if (prefix != stack) {
        close_stack();
        stack = prefix;
        layer = 0;
      }
      sweep.points.push_back(path);
      sweep.names.push_back(stack + std::to_string(layer++) + " in");
    }
    if (name.starts_with("hook_resid_after_")) last_out = path;
  }
  close_stack();
  const auto clean = study::run_with_cache(model, run_clean, sweep.points);
  sweep.exact = study::patch_slices(model, run_corrupted, clean, sweep.points, /*axis=*/1);
  sweep.atp = study::attribution_patch(model, run_corrupted, clean, sweep.points, /*axis=*/1);
  return sweep;
}

Table position_table(const PositionSweep& sweep, double gap, bool atp) {
  // The encoder's stream holds the whole sequence, the decoder's one token less (its input).
  std::vector<std::vector<Cell>> cells(sweep.points.size());
  std::size_t longest = 0;
  for (std::size_t r = 0; r < sweep.exact.rows.size(); ++r) {
    const auto& row = sweep.exact.rows[r];
    const std::size_t i = std::find(sweep.points.begin(), sweep.points.end(), row.point) - sweep.points.begin();
    cells[i].push_back((atp ? sweep.atp.rows[r].atp : row.metric - sweep.exact.target_metric) / gap);
    longest = std::max(longest, cells[i].size());
  }
  Table t{{"stream"}, {}};
  for (std::size_t p = 0; p < longest; ++p) t.header.push_back("pos " + std::to_string(p));
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    std::vector<Cell> row = {sweep.names[i]};
    row.insert(row.end(), cells[i].begin(), cells[i].end());
    row.resize(longest + 1, Cell(std::string()));
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace tapegrad::attention_study
