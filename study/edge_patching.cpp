#include "study/edge_patching.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include <xtensor/xview.hpp>

#include "autograd/core/tape.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "nn/attention_probe.h"
#include "nn/functional_call.h"
#include "study/deterministic_forward.h"
#include "study/integrated_patching.h"
#include "study/metric_without_tape.h"
#include "study/patch_source.h"
#include "study/perturbed_run.h"
#include "study/scoped_point_hooks.h"
#include "study/slices.h"

namespace tapegrad::study {

std::string EdgeSender::name() const {
  if (result.empty()) return out;
  return module_and_point(result).first + ".head" + std::to_string(head);
}

std::string EdgeReceiver::name() const { return head ? input + ".head" + std::to_string(*head) : input; }

namespace {

// The hook_q, hook_k or hook_v that projects an attention module's hook_q_input, hook_k_input or
// hook_v_input; empty for any other point.
std::string projection_of(const std::string& input) {
  const auto [module, name] = module_and_point(input);
  if (name != "hook_q_input" && name != "hook_k_input" && name != "hook_v_input") return {};
  return module + "." + name.substr(0, name.size() - 6);
}

// Where d metric / d receiver is read: its input, or for one head the projection.
std::string gradient_point(const EdgeReceiver& r) { return r.head ? projection_of(r.input) : r.input; }

}  // namespace

std::vector<std::string> edge_points(const std::vector<EdgeSender>& senders, const std::vector<EdgeReceiver>& receivers) {
  std::vector<std::string> points;
  const auto add = [&](const std::string& path) {
    if (!path.empty() && std::find(points.begin(), points.end(), path) == points.end()) points.push_back(path);
  };
  for (const EdgeSender& s : senders) {
    add(s.out);
    add(s.result);
  }
  for (const EdgeReceiver& r : receivers) {
    add(r.input);
    if (r.head) add(projection_of(r.input));
  }
  return points;
}

std::vector<Edge> edges_of(const EdgeTable& table) {
  std::vector<Edge> edges;
  for (const EdgeEffect& row : table.rows) edges.push_back(row.edge);
  return edges;
}

template <class T>
std::vector<EdgeSender> edge_senders(nn::Module<T>& model, bool heads) {
  const auto points = model.named_hook_points();
  std::set<std::string> paths;
  for (const auto& [path, point] : points) paths.insert(path);
  // The attention modules directly under `layer` with a hook_result.
  const auto attention_modules = [&](const std::string& layer) {
    std::vector<std::string> modules;
    for (const std::string& path : paths) {
      const auto [module, name] = module_and_point(path);
      if (name == "hook_result" && module_and_point(module).first == layer) modules.push_back(module);
    }
    return modules;
  };
  std::vector<EdgeSender> senders;
  std::set<std::string> stacks_seen;
  for (const auto& [path, point] : points) {
    const auto [layer, name] = module_and_point(path);
    if (name == "hook_resid_pre") {
      if (stacks_seen.insert(module_and_point(layer).first).second) senders.push_back({path, {}, 0});
      continue;
    }
    if (!name.starts_with("hook_") || !name.ends_with("_out")) continue;
    const std::string sublayer = name.substr(5, name.size() - 9);
    std::string module;
    if (heads) {
      const auto modules = attention_modules(layer);
      const std::string named = layer + "." + sublayer;
      if (std::find(modules.begin(), modules.end(), named) != modules.end()) {
        module = named;
      } else if (sublayer.ends_with("attention")) {
        // The layer's attention modules not named like one of its sublayers; one: this one's.
        std::vector<std::string> unnamed;
        for (const std::string& m : modules)
          if (!paths.count(layer + ".hook_" + module_and_point(m).second + "_out")) unnamed.push_back(m);
        if (unnamed.size() == 1) module = unnamed[0];
      }
    }
    if (module.empty()) {
      senders.push_back({path, {}, 0});
      continue;
    }
    auto* attention = dynamic_cast<nn::ProbedAttention<T>*>(&model.get_submodule(module));
    if (!attention) {
      senders.push_back({path, {}, 0});
      continue;
    }
    for (std::size_t h = 0; h < attention->attention_heads(); ++h) senders.push_back({path, module + ".hook_result", h});
  }
  return senders;
}

template <class T>
std::vector<EdgeReceiver> edge_receivers(nn::Module<T>& model, bool heads) {
  std::vector<EdgeReceiver> receivers;
  std::string last_residual;
  for (const auto& [path, point] : model.named_hook_points()) {
    const auto [module, name] = module_and_point(path);
    if (name.starts_with("hook_resid_after_")) last_residual = path;
    if (projection_of(path).empty()) continue;
    auto* attention = heads ? dynamic_cast<nn::ProbedAttention<T>*>(&model.get_submodule(module)) : nullptr;
    if (!attention) {
      receivers.push_back({path, std::nullopt});
      continue;
    }
    for (std::size_t h = 0; h < attention->attention_heads(); ++h) receivers.push_back({path, h});
  }
  if (!last_residual.empty()) receivers.push_back({last_residual, std::nullopt});
  return receivers;
}

namespace {

// The senders' distinct outs (the points the frozen graph freezes), checked with the rest of what
// both methods take before anything runs.
struct EdgeOuts {
  std::vector<std::string> paths;
  std::vector<std::size_t> of_sender;  // index into paths
};

template <class T>
EdgeOuts checked_outs(nn::Module<T>& model, const std::vector<EdgeSender>& senders,
                      const std::vector<EdgeReceiver>& receivers, const std::string& who) {
  require_deterministic_forward(model, who);
  if (senders.empty()) throw ValueError(who + ": no senders");
  if (receivers.empty()) throw ValueError(who + ": no receivers");
  for (const std::string& path : edge_points(senders, receivers)) model.hook_point(path);
  EdgeOuts outs;
  for (const EdgeSender& s : senders) {
    const auto at = std::find(outs.paths.begin(), outs.paths.end(), s.out);
    outs.of_sender.push_back(at - outs.paths.begin());
    if (at == outs.paths.end()) outs.paths.push_back(s.out);
  }
  for (std::size_t i = 0; i < receivers.size(); ++i) {
    const EdgeReceiver& r = receivers[i];
    if (std::find(outs.paths.begin(), outs.paths.end(), r.input) != outs.paths.end()) {
      throw ValueError(who + ": '" + r.input + "' is both a receiver and a sender's out; a receiver reads the stream");
    }
    if (r.head && projection_of(r.input).empty()) {
      throw ValueError(who + ": the receiver '" + r.name() +
                       "' names a head of a point that is not an attention module's hook_q_input, hook_k_input or "
                       "hook_v_input");
    }
    // Twice, the frozen graph's second hook would read the first one's detached copy; whole and
    // split, an edge into the whole input would also count every head's.
    for (std::size_t j = 0; j < i; ++j) {
      if (receivers[j] == r) throw ValueError(who + ": the receiver '" + r.name() + "' is named twice");
      if (receivers[j].input == r.input && receivers[j].head.has_value() != r.head.has_value()) {
        throw ValueError(who + ": the receiver '" + r.input + "' is named both whole and split into heads");
      }
    }
  }
  return outs;
}

// ValueError unless the target run reached `path` exactly once.
template <class T>
void require_reached_once(const ActivationCache<T>& target, const std::string& path, const std::string& who) {
  require_reached(target.values.count(path), path, who);
  if (target.values.count(path + "#2")) {
    throw ValueError(who + ": the target run reaches '" + path +
                     "' more than once; an edge needs each sender and receiver reached once per forward");
  }
}

template <class T>
const xt::xarray<T>& source_like_target(const ActivationCache<T>& source, const ActivationCache<T>& target,
                                        const std::string& path, const std::string& who) {
  const xt::xarray<T>& from = cached_source_value(source, path, who);
  const xt::xarray<T>& here = target.values.at(path);
  if (from.shape() != here.shape()) {
    throw ShapeError(who + ": '" + path + "' is " + format_shape(here.shape()) + " in the target run but " +
                     format_shape(from.shape()) + " in the source");
  }
  return from;
}

// ValueError unless the heads' patches sum to the out's (to rounding): the pairing of an out with
// an attention module's hook_result is right only if the module's output is the sum of its heads'.
template <class T>
void require_heads_sum_to_out(const xt::xarray<T>& head_patches_sum, const xt::xarray<T>& out_patch,
                              const xt::xarray<T>& out_value, const std::string& result, const std::string& out,
                              const std::string& who) {
  const T scale = xt::amax(xt::abs(out_value))() + xt::amax(xt::abs(out_patch))();
  const T tolerance = (sizeof(T) == 4 ? T(1e-4) : T(1e-10)) * (scale + T(1));
  const T error = xt::amax(xt::abs(head_patches_sum - out_patch))();
  if (!(error <= tolerance)) {
    throw ValueError(who + ": the heads of '" + result + "' do not sum to '" + out + "' (off by " +
                     std::to_string(double(error)) + "): a head sender's out must be its attention module's output");
  }
}

// Each sender's patch, source - target on its out (one head's share of it for a head), from the
// target run's tensors at every edge point (checked: each reached once, shaped as the source's,
// and every receiver's head among its projection's).
template <class T>
std::vector<xt::xarray<T>> sender_patches(const ActivationCache<T>& source, const ActivationCache<T>& target,
                                          const std::vector<EdgeSender>& senders,
                                          const std::vector<EdgeReceiver>& receivers, const std::string& who) {
  for (const std::string& path : edge_points(senders, receivers)) require_reached_once(target, path, who);
  for (const EdgeReceiver& r : receivers) {
    if (!r.head) continue;
    const xt::xarray<T>& projected = target.values.at(projection_of(r.input));
    if (projected.dimension() < 2 || *r.head >= projected.shape()[1]) {
      throw ValueError(who + ": the receiver '" + r.name() + "' is past the heads of '" + projection_of(r.input) +
                       "', " + format_shape(projected.shape()));
    }
  }
  std::map<std::string, xt::xarray<T>> result_patches;  // source - target, by hook_result
  std::vector<xt::xarray<T>> patches;
  for (const EdgeSender& s : senders) {
    const xt::xarray<T>& out = target.values.at(s.out);
    if (s.result.empty()) {
      patches.push_back(source_like_target(source, target, s.out, who) - out);
      continue;
    }
    const xt::xarray<T>& result = target.values.at(s.result);
    if (result.dimension() != out.dimension() + 1 || result.dimension() < 2 || s.head >= result.shape()[1]) {
      throw ValueError(who + ": '" + s.result + "' is " + format_shape(result.shape()) + ", so head " +
                       std::to_string(s.head) + " of it cannot add to '" + s.out + "', " + format_shape(out.shape()));
    }
    auto [difference, first] = result_patches.try_emplace(s.result);
    if (first) difference->second = source_like_target(source, target, s.result, who) - result;
    xt::xarray<T> head = xt::view(difference->second, xt::all(), s.head);
    if (head.shape() != out.shape()) {
      throw ShapeError(who + ": head " + std::to_string(s.head) + " of '" + s.result + "' is " +
                       format_shape(head.shape()) + " but '" + s.out + "' is " + format_shape(out.shape()));
    }
    patches.push_back(std::move(head));
  }
  for (const auto& [result, difference] : result_patches) {
    const std::string& heads_of = result;  // a structured binding, which clang 14's lambdas cannot capture
    const auto sender = std::find_if(senders.begin(), senders.end(), [&](const EdgeSender& s) { return s.result == heads_of; });
    const xt::xarray<T>& out = target.values.at(sender->out);
    xt::xarray<T> heads_sum = xt::zeros<T>(out.shape());
    for (std::size_t h = 0; h < difference.shape()[1]; ++h) heads_sum += xt::view(difference, xt::all(), h);
    require_heads_sum_to_out(heads_sum, xt::xarray<T>(source_like_target(source, target, sender->out, who) - out), out,
                             result, sender->out, who);
  }
  return patches;
}

// The points whose gradients the receivers need (gradient_point), each once.
std::vector<std::string> gradient_points(const std::vector<EdgeReceiver>& receivers) {
  std::vector<std::string> points;
  for (const EdgeReceiver& r : receivers)
    if (std::find(points.begin(), points.end(), gradient_point(r)) == points.end()) points.push_back(gradient_point(r));
  return points;
}

// d metric / d point for each of `points` the target run reaches, from one forward and backward
// with zero leaves at them (PerturbedRun: no parameter's grad() changes).
template <class T>
std::map<std::string, xt::xarray<T>> target_gradients(nn::Module<T>& model, const RunLoss<T>& run_target,
                                                      const std::vector<std::string>& points, const std::string& who) {
  GradientTape tape;
  PerturbedRun<T> run(model, run_target, points, tape, who);
  run.take_gradients();
  std::map<std::string, xt::xarray<T>> gradients;
  for (const auto& [path, calls] : run.calls()) gradients[path] = calls.front().grad.value();
  return gradients;
}

// One recorded forward of the target with every out cut from what computed it and a zero leaf
// added (x.value() + z, the same bits): the frozen graph, in which a receiver's input depends on
// the outs through the residual stream alone. Which outs reach which receiver is read from the
// tape's entries; vector-Jacobian products are walks of the tape. Every tensor has the target
// run's bits, so the run also caches the tensors at `cached` (a later call as "path#2").
template <class T>
class FrozenGraph {
 public:
  FrozenGraph(nn::Module<T>& model, const RunLoss<T>& run_target, const std::vector<std::string>& outs,
              const std::vector<EdgeReceiver>& receivers, const std::vector<std::string>& cached)
      : receivers_(receivers), zeros_(outs.size()) {
    for (const EdgeReceiver& r : receivers) {
      input_of_.push_back(std::find(inputs_.begin(), inputs_.end(), r.input) - inputs_.begin());
      if (input_of_.back() == inputs_.size()) inputs_.push_back(r.input);
    }
    received_.resize(inputs_.size());
    projected_.resize(inputs_.size());
    {
      // Only what depends on the leaves needs recording: the parameters run as constants, and a
      // receiver's input goes on detached (what reads it ends in a frozen out), so the sublayers
      // that end in an out are not recorded, nor is anything after the last receiver. An input
      // split into heads is detached after its projection, which the head's walk goes through.
      // named_parameters() lists a tied tensor once; the substitution covers all of its names.
      std::vector<std::string> names;
      std::vector<Tensor<T>> constants;
      for (const auto& [name, parameter] : model.named_parameters()) {
        names.push_back(name);
        constants.emplace_back(parameter.value());
      }
      const nn::ParameterSubstitution<T> constant_parameters(model, names, constants);
      ScopedPointHooks<T> hooks;
      for (const std::string& path : cached) {
        hooks.add(model.hook_point(path), [this, path](const Tensor<T>& x) -> std::optional<Tensor<T>> {
          if (!values_.values.try_emplace(path, x.value()).second) values_.values.try_emplace(path + "#2", x.value());
          return std::nullopt;
        });
      }
      for (std::size_t o = 0; o < outs.size(); ++o) {
        hooks.add(model.hook_point(outs[o]), [this, o](const Tensor<T>& x) -> std::optional<Tensor<T>> {
          zeros_[o] = Tensor<T>::zeros(x.shape(), /*requires_grad=*/true);
          return Tensor<T>(x.value()) + zeros_[o];
        });
      }
      for (std::size_t i = 0; i < inputs_.size(); ++i) {
        const bool split = std::any_of(receivers.begin(), receivers.end(),
                                       [&](const EdgeReceiver& r) { return r.input == inputs_[i] && r.head; });
        hooks.add(model.hook_point(inputs_[i]), [this, i, split](const Tensor<T>& x) -> std::optional<Tensor<T>> {
          received_[i] = x;
          return split ? x : Tensor<T>(x.value());
        });
        if (!split) continue;
        hooks.add(model.hook_point(projection_of(inputs_[i])), [this, i](const Tensor<T>& x) -> std::optional<Tensor<T>> {
          projected_[i] = x;
          return Tensor<T>(x.value());
        });
      }
      values_.metric = double(run_target().item());
    }
    reaches_ = outs_reaching_inputs();
  }

  bool connected(std::size_t out, std::size_t receiver) const { return reaches_[input_of_[receiver]][out]; }
  // The target run's metric and its tensors at the cached points.
  const ActivationCache<T>& values() const { return values_; }

  // d <g, receiver> / d out for every out connected to the receiver (undefined for the others: a
  // walk returns zeros for a source it does not reach, which would cost a full-size array each).
  // g is shaped as the receiver's gradient_point; for one head, its slice is the one read.
  std::vector<Tensor<T>> pull_back(std::size_t receiver, const xt::xarray<T>& g) {
    std::vector<Tensor<T>> sources;
    for (std::size_t o = 0; o < zeros_.size(); ++o)
      if (connected(o, receiver)) sources.push_back(zeros_[o]);
    const EdgeReceiver& r = receivers_[receiver];
    const std::size_t i = input_of_[receiver];
    Tensor<T> read;
    if (r.head) {
      xt::xarray<T> head_only = xt::zeros<T>(g.shape());
      xt::view(head_only, xt::all(), *r.head) = xt::view(g, xt::all(), *r.head);
      read = sum(projected_[i] * Tensor<T>(std::move(head_only)));
    } else {
      read = sum(received_[i] * Tensor<T>(g));
    }
    std::vector<Tensor<T>> pulled = tape_.gradient(read, sources);
    std::vector<Tensor<T>> by_out(zeros_.size());
    for (std::size_t o = 0, next = 0; o < zeros_.size(); ++o)
      if (connected(o, receiver)) by_out[o] = std::move(pulled[next++]);
    return by_out;
  }

 private:
  // reaches[i][o]: the tape recorded a path from out o's leaf to input i. Entries are in creation
  // order, a topological order, so one pass carries each node's set of outs.
  std::vector<std::vector<bool>> outs_reaching_inputs() const {
    std::unordered_map<const NodeBase*, std::vector<bool>> reached;
    for (std::size_t o = 0; o < zeros_.size(); ++o) {
      if (!zeros_[o].node()) continue;
      std::vector<bool>& bits = reached[zeros_[o].node().get()];
      bits.assign(zeros_.size(), false);
      bits[o] = true;
    }
    for (const auto& entry : tape_.entries()) {
      std::vector<bool> bits(zeros_.size(), false);
      bool any = false;
      for (const auto& input : entry->inputs) {
        const auto it = reached.find(input.node.get());
        if (it == reached.end()) continue;
        any = true;
        for (std::size_t o = 0; o < bits.size(); ++o) bits[o] = bits[o] || it->second[o];
      }
      if (any) reached[entry->output.get()] = std::move(bits);
    }
    std::vector<std::vector<bool>> reaches;
    for (const Tensor<T>& x : received_) {
      const auto it = x.node() ? reached.find(x.node().get()) : reached.end();
      reaches.push_back(it == reached.end() ? std::vector<bool>(zeros_.size(), false) : it->second);
    }
    return reaches;
  }

  GradientTape tape_{/*persistent=*/true};  // walked once per receiver
  std::vector<EdgeReceiver> receivers_;
  std::vector<std::string> inputs_;     // the receivers' distinct inputs
  std::vector<std::size_t> input_of_;  // per receiver, its input's index
  std::vector<Tensor<T>> zeros_;
  std::vector<Tensor<T>> received_;   // per input
  std::vector<Tensor<T>> projected_;  // per input split into heads: its projection, recorded
  ActivationCache<T> values_;
  std::vector<std::vector<bool>> reaches_;  // per input
};

}  // namespace

template <class T>
EdgeTable attribute_edges(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                          const std::vector<EdgeSender>& senders, const std::vector<EdgeReceiver>& receivers,
                          const EdgeAttributionOptions& options) {
  const std::string who = "attribute_edges";
  const EdgeOuts outs = checked_outs(model, senders, receivers, who);
  std::set<std::string> moved(options.interpolate_at.begin(), options.interpolate_at.end());
  if (moved.empty() != (options.ig_steps == 0)) {
    throw ValueError(who + ": EAP-IG needs both ig_steps and interpolate_at (the points to move), got " +
                     std::to_string(options.ig_steps) + " steps and " + std::to_string(moved.size()) + " points");
  }
  // d metric / d gradient_point (EAP-IG: its mean)
  std::map<std::string, xt::xarray<T>> gradients;
  if (moved.empty()) {
    gradients = target_gradients(model, run_target, gradient_points(receivers), who);
  } else {
    for (const std::string& path : moved) model.hook_point(path);
    const ActivationCache<T> target = run_with_cache(model, run_target, std::vector<std::string>(moved.begin(), moved.end()));
    for (const std::string& path : moved) {
      require_reached_once(target, path, who);
      source_like_target(source, target, path, who);
    }
    for (auto& [path, mean] :
         mean_gradients(model, run_target, source, target, gradient_points(receivers), moved, options.ig_steps, who))
      if (!mean.empty()) gradients[path] = std::move(mean.front());
  }
  FrozenGraph<T> frozen(model, run_target, outs.paths, receivers, edge_points(senders, receivers));
  const ActivationCache<T>& target = frozen.values();
  const std::vector<xt::xarray<T>> patches = sender_patches(source, target, senders, receivers, who);

  EdgeTable table;
  table.target_metric = target.metric;
  table.source_metric = source.metric;
  std::vector<std::vector<Tensor<T>>> pulled(receivers.size());
  for (std::size_t r = 0; r < receivers.size(); ++r) {
    bool any = false;
    for (std::size_t o = 0; o < outs.paths.size(); ++o) any = any || frozen.connected(o, r);
    if (any) pulled[r] = frozen.pull_back(r, gradients.at(gradient_point(receivers[r])));  // one walk each
  }
  for (std::size_t s = 0; s < senders.size(); ++s) {
    const std::size_t o = outs.of_sender[s];
    for (std::size_t r = 0; r < receivers.size(); ++r) {
      if (!frozen.connected(o, r)) continue;
      table.rows.push_back({{senders[s], receivers[r]}, whole_dot(patches[s], pulled[r][o].value())});
    }
  }
  return table;
}

template <class T>
EdgeTable patch_edges(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                      const std::vector<EdgeSender>& senders, const std::vector<Edge>& edges) {
  const std::string who = "patch_edges";
  std::vector<EdgeReceiver> receivers;
  std::vector<std::string> inputs;  // the receivers' distinct inputs
  for (const Edge& e : edges) {
    if (std::find(receivers.begin(), receivers.end(), e.receiver) == receivers.end()) receivers.push_back(e.receiver);
    if (std::find(inputs.begin(), inputs.end(), e.receiver.input) == inputs.end()) inputs.push_back(e.receiver.input);
  }
  if (edges.empty()) throw ValueError(who + ": no edges");
  const EdgeOuts outs = checked_outs(model, senders, receivers, who);
  const ActivationCache<T> target = run_with_cache(model, run_target, edge_points(senders, receivers));
  const std::vector<xt::xarray<T>> patches = sender_patches(source, target, senders, receivers, who);
  const auto sender_index = [&](const EdgeSender& wanted) {
    for (std::size_t s = 0; s < senders.size(); ++s) {
      if (senders[s].out == wanted.out && senders[s].result == wanted.result && senders[s].head == wanted.head) return s;
    }
    throw ValueError(who + ": the edge's sender '" + wanted.name() + "' is not among the senders");
  };

  EdgeTable table;
  table.target_metric = target.metric;
  table.source_metric = source.metric;
  std::optional<std::size_t> moved_sender;
  std::map<std::string, xt::xarray<T>> moved_inputs;  // each receiver's input with moved_sender patched
  for (const Edge& edge : edges) {
    const std::size_t s = sender_index(edge.sender);
    if (moved_sender != s) {
      // Every out frozen at the target's, this sender's moved by its patch: the receivers' inputs.
      moved_sender = s;
      moved_inputs.clear();
      ScopedPointHooks<T> hooks;
      for (std::size_t o = 0; o < outs.paths.size(); ++o) {
        const xt::xarray<T>& frozen = target.values.at(outs.paths[o]);
        const bool moved = o == outs.of_sender[s];
        hooks.add(model.hook_point(outs.paths[o]), [&, moved](const Tensor<T>&) -> std::optional<Tensor<T>> {
          return Tensor<T>(moved ? xt::xarray<T>(frozen + patches[s]) : frozen);
        });
      }
      for (const std::string& r : inputs) {
        hooks.add(model.hook_point(r), [&, r](const Tensor<T>& x) -> std::optional<Tensor<T>> {
          moved_inputs[r] = x.value();
          return std::nullopt;
        });
      }
      metric_without_tape<T>(run_target, who, "run_target", "metric");
    }
    ScopedPointHooks<T> hooks;
    const EdgeReceiver& r = edge.receiver;
    const xt::xarray<T>& input = moved_inputs.at(r.input);
    hooks.add(model.hook_point(r.input), [&](const Tensor<T>&) -> std::optional<Tensor<T>> { return Tensor<T>(input); });
    if (r.head) {
      // The projection of the moved input, kept for this head alone: the other heads read the target's.
      const xt::xarray<T>& projected = target.values.at(projection_of(r.input));
      hooks.add(model.hook_point(projection_of(r.input)), [&](const Tensor<T>& x) -> std::optional<Tensor<T>> {
        xt::xarray<T> kept = projected;
        xt::view(kept, xt::all(), *r.head) = xt::view(x.value(), xt::all(), *r.head);
        return Tensor<T>(std::move(kept));
      });
    }
    const double metric = metric_without_tape<T>(run_target, who, "run_target", "metric");
    table.rows.push_back({edge, metric - table.target_metric});
  }
  return table;
}

#define TAPEGRAD_INSTANTIATE_EDGE_PATCHING(T)                                                                  \
  template std::vector<EdgeSender> edge_senders(nn::Module<T>&, bool);                                         \
  template std::vector<EdgeReceiver> edge_receivers(nn::Module<T>&, bool);                                    \
  template EdgeTable attribute_edges(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,             \
                                     const std::vector<EdgeSender>&, const std::vector<EdgeReceiver>&,         \
                                     const EdgeAttributionOptions&);                                           \
  template EdgeTable patch_edges(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,                 \
                                 const std::vector<EdgeSender>&, const std::vector<Edge>&);
TAPEGRAD_INSTANTIATE_EDGE_PATCHING(float)
TAPEGRAD_INSTANTIATE_EDGE_PATCHING(double)
#undef TAPEGRAD_INSTANTIATE_EDGE_PATCHING

}  // namespace tapegrad::study
