// Rows of docs/bad-inputs.md, section "attribution": the methods of study/attribution/*.h over
// forward-order lists of [batch, heads, seq_q, seq_k] maps.
#include <initializer_list>
#include <vector>

#include "study/attribution.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

using Maps = std::vector<xt::xarray<double>>;

// Zero maps of the given shapes, one per layer.
Maps maps(std::initializer_list<Shape> shapes) {
  Maps out;
  for (const auto& s : shapes) out.push_back(xt::zeros<double>(s));
  return out;
}

BAD_INPUT_ROW(Attribution, attribution_empty_layer_list, ValueError, (study::attention_rollout<double>(Maps{})),
              "attention_rollout", "'attention'", "empty list of layers")
BAD_INPUT_ROW(Attribution, attribution_map_not_4d, ShapeError, (study::attention_rollout<double>(maps({{2, 2}}))),
              "attention_rollout", "attention[0]", "[batch, heads, seq_q, seq_k]", "[2,2]")
BAD_INPUT_ROW(Attribution, attribution_map_not_square, ShapeError,
              (study::attention_rollout<double>(maps({{1, 2, 2, 3}}))), "attention_rollout", "attention[0]", "square",
              "[1,2,2,3]")
BAD_INPUT_ROW(Attribution, attribution_seq_lengths_differ, ShapeError,
              (study::attention_flow<double>(maps({{1, 2, 2, 2}, {1, 2, 3, 3}}))), "attention_flow",
              "attention[1] has shape [1,2,3,3] but attention[0] has [1,2,2,2]")
BAD_INPUT_ROW(Attribution, attribution_gradient_count, ValueError,
              (study::gradient_weighted_rollout<double>(maps({{1, 2, 2, 2}, {1, 2, 2, 2}}), maps({{1, 2, 2, 2}}))),
              "gradient_weighted_rollout", "2 layers in 'attention' but 1 in 'gradients'")
BAD_INPUT_ROW(Attribution, attribution_gradient_shape, ShapeError,
              (study::gradient_weighted_rollout<double>(maps({{1, 2, 2, 2}}), maps({{1, 1, 2, 2}}))),
              "gradient_weighted_rollout", "gradients[0] has shape [1,1,2,2] but attention[0] has [1,2,2,2]")
// 0.5 · mean(A) + 0.5 · I with A's row 0 = [-1, 0]: that row sums to 0.
BAD_INPUT_ROW(Attribution, attribution_row_sums_to_zero, ValueError,
              (study::attention_rollout<double>(Maps{xt::xarray<double>{{{{-1, 0}, {0, 1}}}}})), "attention_rollout",
              "row 0 of layer 0, sequence 0 sums to 0")
// dL/dA [1,1,2,2] with a NaN at query 0, key 1 (a NaN loss upstream): the clip would skip it.
BAD_INPUT_ROW(Attribution, attribution_non_finite_entry, ValueError,
              (study::gradient_weighted_rollout<double>(Maps{xt::xarray<double>{{{{1, 0}, {0, 1}}}}},
                                                        Maps{xt::xarray<double>{{{{1, nan}, {1, 1}}}}})),
              "gradient_weighted_rollout", "gradients[0] holds nan at batch 0, head 0, query 0, key 1", "finite")
BAD_INPUT_ROW(Attribution, attribution_no_heads, ShapeError, (study::attention_rollout<double>(maps({{1, 0, 2, 2}}))),
              "attention_rollout", "attention[0] has no heads", "[1,0,2,2]")
BAD_INPUT_ROW(Attribution, attention_flow_negative_capacity, ValueError,
              (study::attention_flow<double>(Maps{-xt::ones<double>({1, 1, 2, 2})})), "attention_flow",
              "attention[0] holds -1", ">= 0")
BAD_INPUT_ROW(Attribution, chefer_cross_shape, ShapeError,
              (study::chefer_encoder_decoder_relevance<double>({maps({{1, 1, 2, 2}}), maps({{1, 1, 2, 2}})},
                                                               {maps({{1, 1, 2, 2}}), maps({{1, 1, 2, 2}})},
                                                               {maps({{1, 1, 2, 3}}), maps({{1, 1, 2, 3}})})),
              "chefer_encoder_decoder_relevance", "cross.attention[0] has shape [1,1,2,3]", "[1, heads, 2, 2]")
BAD_INPUT_ROW(Attribution, chefer_cross_count, ValueError,
              (study::chefer_encoder_decoder_relevance<double>(
                  {maps({{1, 1, 2, 2}}), maps({{1, 1, 2, 2}})},
                  {maps({{1, 1, 2, 2}, {1, 1, 2, 2}}), maps({{1, 1, 2, 2}, {1, 1, 2, 2}})},
                  {maps({{1, 1, 2, 2}}), maps({{1, 1, 2, 2}})})),
              "chefer_encoder_decoder_relevance", "2 decoder self-attention layers but 1 cross-attention")
BAD_INPUT_ROW(Attribution, head_importance_head_counts_differ, ShapeError,
              (study::head_importance<double>(maps({{1, 2, 2, 2}, {1, 1, 2, 2}}), maps({{1, 2, 2, 2}, {1, 1, 2, 2}}))),
              "head_importance", "attention[1] has shape [1,1,2,2]", "every layer needs 2 heads")
BAD_INPUT_ROW(Attribution, integrated_gradients_zero_steps, ValueError,
              (study::integrated_gradients<double>(xt::xarray<double>{1.0}, [](double) { return xt::xarray<double>{1.0}; },
                                                   0)),
              "integrated_gradients", "steps must be at least 1, got 0")
BAD_INPUT_ROW(Attribution, integrated_gradients_gradient_shape, ShapeError,
              (study::integrated_gradients<double>(xt::xarray<double>{1.0, 2.0, 3.0},
                                                   [](double) { return xt::xarray<double>{1.0, 2.0}; })),
              "integrated_gradients", "grad_at(0.05) returned shape [2] but attention has shape [3]")
BAD_INPUT_ROW(Attribution, integrated_gradients_empty_callback, ValueError,
              (study::integrated_gradients<double>(xt::xarray<double>{1.0}, study::AttentionGradientAt<double>{})),
              "integrated_gradients", "'grad_at'", "empty function")

}  // namespace
}  // namespace tapegrad::bad_inputs
