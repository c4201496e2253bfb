#include "study/attribution_patching.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "autograd/core/tape.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "study/deterministic_forward.h"
#include "study/patch_source.h"
#include "study/perturbed_run.h"
#include "study/scoped_point_hooks.h"
#include "study/slices.h"

namespace tapegrad::study {

namespace {

bool qk_point(const std::string& path) {
  const std::string name = module_and_point(path).second;
  return name == "hook_q" || name == "hook_k";
}

// The points the target run hooks: those asked for and, for the QK fix, the attention module's q,
// k, S and A of each q or k point; each once.
std::vector<std::string> hooked_points(const std::vector<std::string>& points, bool qk_fix) {
  std::vector<std::string> hooked;
  const auto add = [&](const std::string& path) {
    if (std::find(hooked.begin(), hooked.end(), path) == hooked.end()) hooked.push_back(path);
  };
  for (const std::string& path : points) {
    add(path);
    if (!qk_fix || !qk_point(path)) continue;
    const std::string prefix = module_and_point(path).first;
    for (const char* name : {"hook_q", "hook_k", "hook_attn_scores", "hook_pattern"})
      add(prefix.empty() ? name : prefix + "." + name);
  }
  return hooked;
}

// AtP*'s QK fix for call `call` of a q or k point moved by `delta` (the patch direction, its
// shape): A' - A, with A' = softmax(S + dS) exact. It does not depend on the metric's gradient,
// so one computation serves every backward walk.
template <class T>
xt::xarray<T> pattern_change(const std::string& path, std::size_t call, const xt::xarray<T>& delta,
                             const CallsByPoint<T>& calls) {
  const std::string prefix = module_and_point(path).first;
  const auto at = [&](const char* name) -> const PointCall<T>& {
    return calls.at(prefix.empty() ? name : prefix + "." + name).at(call);
  };
  const PointCall<T>&q = at("hook_q"), &k = at("hook_k"), &S = at("hook_attn_scores"), &A = at("hook_pattern");
  NoGradGuard no_grad;
  const Tensor<T> moved = Tensor<T>(delta);
  const Tensor<T> score_change = module_and_point(path).second == "hook_q"
                                     ? matmul(moved, transpose(Tensor<T>(k.value), 2, 3))
                                     : matmul(Tensor<T>(q.value), transpose(moved, 2, 3));
  const T scale = T(1) / std::sqrt(T(q.value.shape()[3]));
  return softmax(Tensor<T>(S.value) + score_change * scale, -1).value() - A.value;
}

// The gradient dmetric/dA of call `call` of the attention module of `path` (a q or k point).
template <class T>
const xt::xarray<T>& pattern_gradient(const std::string& path, std::size_t call, const CallsByPoint<T>& calls) {
  const std::string prefix = module_and_point(path).first;
  return calls.at(prefix.empty() ? "hook_pattern" : prefix + ".hook_pattern").at(call).grad.value();
}

// 1/2 d^T H d for the patch directions `directions` (one per call of the point), from the
// recorded gradients: the gradient of <grad, d> with respect to the point's leaves, dotted with d.
template <class T>
double second_order_term(GradientTape& tape, const std::vector<PointCall<T>>& calls,
                         const std::vector<xt::xarray<T>>& directions) {
  Tensor<T> along;
  std::vector<Tensor<T>> leaves;
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const Tensor<T> term = sum(calls[c].grad * Tensor<T>(directions[c]));
    along = along.defined() ? along + term : term;
    leaves.push_back(calls[c].zero);
  }
  if (!along.defined() || !along.requires_grad()) return 0;  // the gradient is constant: no curvature
  const std::vector<Tensor<T>> hv = tape.gradient(along, leaves);
  double quadratic = 0;
  for (std::size_t c = 0; c < calls.size(); ++c) quadratic += whole_dot(hv[c].value(), directions[c]);
  return quadratic / 2;
}

}  // namespace

double AttributedSlice::curvature_share() const {
  const double total = std::abs(atp) + std::abs(second_order);
  return total == 0 ? 0.0 : std::abs(second_order) / total;
}

template <class T>
std::vector<std::vector<std::string>> layer_output_points(nn::Module<T>& model) {
  std::vector<std::vector<std::string>> layers;
  std::string current;
  for (const auto& [path, point] : model.named_hook_points()) {
    const auto [module, name] = module_and_point(path);
    if (!name.starts_with("hook_") || !name.ends_with("_out")) continue;
    if (layers.empty() || module != current) layers.emplace_back();
    current = module;
    layers.back().push_back(path);
  }
  return layers;
}

template <class T>
AttributionTable attribution_patch(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                                   const std::vector<std::string>& points, const SliceAxes& axes,
                                   const AttributionOptions& options) {
  const std::string who = "attribution_patch";
  require_deterministic_forward(model, who);
  for (const std::string& path : points) patchable_point(model, source, path, axes, who);
  const auto& layers = options.grad_drop_layers;
  if (layers.size() == 1) throw ValueError(who + ": GradDrop needs two layers or more, got one");
  std::vector<std::vector<nn::HookPoint<T>*>> layer_points;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (layers[l].empty()) throw ValueError(who + ": GradDrop layer " + std::to_string(l) + " has no points");
    layer_points.emplace_back();
    for (const std::string& path : layers[l]) layer_points.back().push_back(&model.hook_point(path));
  }

  GradientTape tape(/*persistent=*/true);  // walked again per second-order slice and per GradDrop layer
  std::optional<std::size_t> dropped_layer;  // the GradDrop layer whose gradient the walk zeroes
  ScopedPointHooks<T> gradient_hooks;        // before the forward: they sit on the tensors it records
  for (std::size_t l = 0; l < layer_points.size(); ++l) {
    for (nn::HookPoint<T>* point : layer_points[l]) {
      gradient_hooks.add_gradient(*point, [&dropped_layer, l](const xt::xarray<T>& g) -> std::optional<xt::xarray<T>> {
        if (dropped_layer != l) return std::nullopt;
        return xt::xarray<T>(xt::zeros<T>(g.shape()));
      });
    }
  }
  PerturbedRun<T> run(model, run_target, hooked_points(points, options.qk_fix), tape, who);
  CallsByPoint<T>& calls = run.calls();

  // The patch direction of each call of `path` (source - target), checked against the source.
  std::map<std::string, std::vector<xt::xarray<T>>> deltas;
  for (const std::string& path : points) {
    if (deltas.count(path)) continue;  // named twice: its rows repeat, its directions do not
    require_reached(calls[path].size(), path, who);
    for (const PointCall<T>& call : calls[path]) {
      const xt::xarray<T>& from = source.value(call.name);
      if (from.shape() != call.value.shape()) {
        throw ShapeError(who + ": '" + call.name + "' is " + format_shape(call.value.shape()) +
                         " in the target run but " + format_shape(from.shape()) + " in the source");
      }
      deltas[path].push_back(from - call.value);
    }
  }
  // Calls f(row, path, index, directions) for each slice of each point in patch_slices' order;
  // directions() gives the slice's patch per call (zero off the slice), built when first asked:
  // plain AtP reads the slice of the whole difference instead.
  using Directions = std::vector<xt::xarray<T>>;
  const auto for_each_slice = [&](const auto& f) {
    std::size_t row = 0;
    for (const std::string& path : points) {
      for (std::size_t index = 0; index < axes.count(source.values.at(path).shape()); ++index, ++row) {
        std::optional<Directions> built;
        const auto directions = [&]() -> const Directions& {
          if (!built) {
            built.emplace();
            for (const xt::xarray<T>& delta : deltas[path])
              built->push_back(with_slice_from(xt::xarray<T>(xt::zeros_like(delta)), delta, axes, index));
          }
          return *built;
        };
        f(row, path, index, directions);
      }
    }
  };
  // The first-order estimate from the gradients the last walk left in `calls`; with the QK fix,
  // q and k slices read their A' - A, computed once, by (path, index, call).
  std::map<std::tuple<std::string, std::size_t, std::size_t>, xt::xarray<T>> pattern_changes;
  const auto first_order = [&](const std::string& path, std::size_t index, const auto& directions) {
    const bool fixed = options.qk_fix && qk_point(path);
    double sum = 0;
    for (std::size_t c = 0; c < deltas[path].size(); ++c) {
      if (!fixed) {
        sum += slice_dot(deltas[path][c], calls[path][c].grad.value(), axes, index);
        continue;
      }
      auto [change, added] = pattern_changes.try_emplace({path, index, c});
      if (added) change->second = pattern_change(path, c, directions()[c], calls);
      sum += whole_dot(change->second, pattern_gradient(path, c, calls));
    }
    return sum;
  };

  AttributionTable table;
  table.target_metric = double(run.metric().item());
  table.source_metric = source.metric;
  run.take_gradients(options.second_order);
  for_each_slice([&](std::size_t, const std::string& path, std::size_t index, const auto& directions) {
    AttributedSlice row{path, index, axes.coordinates(source.values.at(path).shape(), index)};
    row.atp = first_order(path, index, directions);
    if (options.second_order && !(options.qk_fix && qk_point(path)))
      row.second_order = second_order_term(tape, calls[path], directions());
    table.rows.push_back(std::move(row));
  });
  for (std::size_t l = 0; l < layers.size(); ++l) {
    dropped_layer = l;
    run.take_gradients();
    for_each_slice([&](std::size_t row, const std::string& path, std::size_t index, const auto& directions) {
      table.rows[row].grad_drop += std::abs(first_order(path, index, directions)) / double(layers.size() - 1);
    });
  }
  return table;
}

#define TAPEGRAD_INSTANTIATE_ATTRIBUTION_PATCHING(T)                                                          \
  template AttributionTable attribution_patch(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,  \
                                              const std::vector<std::string>&, const SliceAxes&,              \
                                              const AttributionOptions&);                                  \
  template std::vector<std::vector<std::string>> layer_output_points(nn::Module<T>&);
TAPEGRAD_INSTANTIATE_ATTRIBUTION_PATCHING(float)
TAPEGRAD_INSTANTIATE_ATTRIBUTION_PATCHING(double)
#undef TAPEGRAD_INSTANTIATE_ATTRIBUTION_PATCHING

}  // namespace tapegrad::study
