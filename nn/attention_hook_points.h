#pragma once
// The hook points every multi-head attention family has (nn/hook_point.h), per head, with the
// heads on axis 1 whatever the family's own layout (TransformerLens's names in brackets):
//   hook_q_input, hook_k_input, hook_v_input
//                           the module's query, key and value inputs, before the projections,
//                           batch first whatever the family's layout  [batch, seq, d_model]
//                           (replacing one changes only its role: the keys' input of a
//                           self-attention call without its queries' or values')
//   hook_q, hook_k, hook_v  the projected queries, keys, values       [batch, heads, seq, d_k]
//   hook_z                  the heads' outputs A V                     [batch, heads, seq_q, d_k]
//   hook_result             each head's contribution to the module's output (hook_result)
//                                                                      [batch, heads, seq_q, d_model]
//   hook_attn_scores        S, after the mask, before the softmax      [batch, heads, seq_q, seq_k]
//   hook_pattern            A = softmax(S), before dropout            [batch, heads, seq_q, seq_k]
// S and A are where the attention probes run (nn/attention_probe.h): a hook on either makes the
// family compute them as a probe does, and sees them after the probes.
//
// The families join the heads' outputs head-major (head h at features [h*d_k, (h+1)*d_k)) before
// their output Linear, so head h's result is z_h times that block of the Linear's weight, and the
// output is the sum of the results plus the bias. A family computes the output that way only
// while hook_result is hooked: its output Linear is then not called, and its module hooks do not run.
#include <string>
#include <utility>
#include <vector>

#include "nn/attention_probe.h"
#include "nn/hook_point.h"
#include "nn/linear.h"

namespace tapegrad::nn {

template <class T>
struct AttentionHookPoints {
  HookPoint<T> q_input, k_input, v_input, q, k, v, z, result;

  // (name, point) in the order a module registers them.
  std::vector<std::pair<std::string, HookPoint<T>*>> named() {
    return {{"hook_q_input", &q_input}, {"hook_k_input", &k_input}, {"hook_v_input", &v_input},
            {"hook_q", &q},             {"hook_k", &k},             {"hook_v", &v},
            {"hook_z", &z},             {"hook_result", &result}};
  }
};

// Every point of an attention module, in the order of its forward, for the module to register:
// `points`' inputs, q, k, v, then `maps`' S and A, then z and result.
template <class T>
std::vector<std::pair<std::string, HookPoint<T>*>> attention_hook_points(AttentionHookPoints<T>& points,
                                                                         ProbedAttention<T>& maps) {
  auto named = points.named();
  const auto in_maps = maps.map_points();
  named.insert(named.begin() + 6, in_maps.begin(), in_maps.end());  // after hook_v
  return named;
}

// z [batch, heads, seq_q, d_k] -> each head's result [batch, heads, seq_q, d_model] through
// `projection` (in_features heads * d_k, out_features d_model).
template <class T>
Tensor<T> head_results(const Tensor<T>& z, const Linear<T>& projection);

// results [batch, heads, seq_q, d_model] -> the output [batch, seq_q, d_model]: their sum plus the bias.
template <class T>
Tensor<T> sum_of_head_results(const Tensor<T>& results, const Linear<T>& projection);

}  // namespace tapegrad::nn
