#include <limits>

#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

namespace {

constexpr Index kIgnore = -100;

// Rows 0 and 2 of batch 0 allow some keys; every query of batch 1 is fully masked.
AttendMask batch_mask() { return AttendMask(Mask{{{true, false, true, true}}, {{false, false, false, false}}}); }
// Per [query, key]: query 1 is fully masked in every batch.
AttendMask query_mask() {
  return AttendMask(Mask{{true, true, false, true}, {false, false, false, false}, {false, true, true, false}});
}

// A leaf whose entry `at` (flat) is -inf: a masked logit.
Tensor<double> with_minus_inf(Tensor<double> t, std::size_t at) {
  t.mutable_value().data()[at] = -std::numeric_limits<double>::infinity();
  return t;
}

// The options are written for double and rebuilt for the case's element type (no weight here).
OpCase cross_entropy_case(std::string name, Shape shape, IndexArray targets, CrossEntropyOptions<double> options,
                          std::uint64_t seed) {
  return {std::move(name),
          [targets, options](const auto& x) {
            return cross_entropy(x[0], targets,
                                 {.ignore_index = options.ignore_index,
                                  .label_smoothing = options.label_smoothing,
                                  .reduction = options.reduction});
          },
          [shape, seed] { return V{leaf(shape, seed, -2.0, 2.0)}; }};
}

}  // namespace

// layer_norm, attention_softmax, embedding and the losses. embedding and nll_loss are linear in
// their differentiable input, so they are squared or multiplied by another leaf.
std::vector<OpCase> norm_attention_loss_cases() {
  return {
      // layer_norm: with and without weight and bias, one and two normalized axes.
      OpCase("layer_norm_x_only", [](const auto& x) { return layer_norm(x[0], {4}); }, [] { return V{leaf({3, 4}, 301)}; }).at_scale([] { return V{leaf({4001, 4}, 918)}; }),
      {"layer_norm_vector", [](const auto& x) { return layer_norm(x[0], {6}); }, [] { return V{leaf({6}, 302)}; }},
      OpCase("layer_norm_weight_bias", [](const auto& x) { return layer_norm(x[0], {4}, x[1], x[2]); },
       [] { return V{leaf({2, 3, 4}, 303), leaf({4}, 304), leaf({4}, 305)}; }).at_scale([] { return V{leaf({61, 97, 4}, 915), leaf({4}, 916), leaf({4}, 917)}; }),
      {"layer_norm_weight_only", [](const auto& x) { return layer_norm(x[0], {5}, x[1]); },
       [] { return V{leaf({3, 5}, 306), leaf({5}, 307)}; }},
      {"layer_norm_bias_only", [](const auto& x) { return mul(layer_norm(x[0], {5}, {}, x[1]), x[0]); },
       [] { return V{leaf({3, 5}, 308), leaf({5}, 309)}; }},
      {"layer_norm_two_axes", [](const auto& x) { return layer_norm(x[0], {3, 2}, x[1], x[2]); },
       [] { return V{leaf({2, 3, 2}, 310), leaf({3, 2}, 311), leaf({3, 2}, 312)}; }},
      {"layer_norm_squared",
       [](const auto& x) {
         const auto y = layer_norm(x[0], {4}, x[1], x[2]);
         return mul(y, y);
       },
       [] { return V{leaf({3, 4}, 313), leaf({4}, 314), leaf({4}, 315)}; }},
      {"layer_norm_constant_x",
       [](const auto& x) {
         const auto y = layer_norm(x[0], {4}, x[1], x[2]);
         return mul(y, y);
       },
       [] { return V{constant({3, 4}, 316), leaf({4}, 317), leaf({4}, 318)}; }},

      // attention_softmax: no mask, masks broadcast over queries or batches, fully masked rows.
      OpCase("attention_softmax_no_mask", [](const auto& x) { return attention_softmax(x[0], std::nullopt, 0.7); },
       [] { return V{leaf({2, 3, 4}, 320)}; }).at_scale([] { return V{leaf({64, 33, 61}, 919)}; }),
      {"attention_softmax_vector", [](const auto& x) { return attention_softmax(x[0], std::nullopt, 1.3); },
       [] { return V{leaf({5}, 321)}; }},
      {"attention_softmax_batch_mask",
       [](const auto& x) { return attention_softmax(x[0], std::optional<AttendMask>(batch_mask()), 0.5); },
       [] { return V{leaf({2, 3, 4}, 322)}; }},
      {"attention_softmax_query_mask",
       [](const auto& x) { return attention_softmax(x[0], std::optional<AttendMask>(query_mask()), 1.5); },
       [] { return V{leaf({2, 3, 4}, 323)}; }},
      {"attention_softmax_times_input",
       [](const auto& x) { return mul(attention_softmax(x[0], std::optional<AttendMask>(query_mask()), 0.9), x[1]); },
       [] { return V{leaf({2, 3, 4}, 324), leaf({3, 4}, 325)}; }},

      // embedding: repeated indices, output times another leaf, a (negative) padding index.
      {"embedding_squared",
       [](const auto& x) {
         const auto e = embedding(x[0], IndexArray{{0, 2, 2}, {3, 0, 1}});
         return mul(e, e);
       },
       [] { return V{leaf({4, 3}, 330)}; }},
      {"embedding_times_leaf", [](const auto& x) { return mul(embedding(x[0], IndexArray{3, 0, 3, 2}), x[1]); },
       [] { return V{leaf({4, 2}, 332), leaf({4, 2}, 333)}; }},
      // The padding row is picked but its gradient is 0 by definition, which central differences
      // agree with only where the output does not move with it: here its values are 0 and only
      // their square is read. test_embedding checks the padding row's second order in full.
      {"embedding_padding_squared",
       [](const auto& x) {
         const auto e = embedding(x[0], IndexArray{{1, 2, 1}, {3, 1, 0}}, -3);
         return mul(e, e);
       },
       [] {
         Tensor<double> weight = leaf({4, 3}, 331);
         for (std::size_t j = 0; j < 3; ++j) weight.mutable_value()(1, j) = 0.0;
         return V{weight};
       }},

      // cross_entropy: every reduction, ignore_index, label smoothing, [C], spatial, a -inf logit.
      cross_entropy_case("cross_entropy_mean", {3, 4}, IndexArray{0, 3, 1}, {}, 340),
      cross_entropy_case("cross_entropy_none", {3, 4}, IndexArray{2, 0, 3}, {.reduction = Reduction::None}, 341),
      cross_entropy_case("cross_entropy_sum_ignore", {4, 3}, IndexArray{1, kIgnore, 0, 2},
                         {.reduction = Reduction::Sum}, 342),
      cross_entropy_case("cross_entropy_mean_ignore_smoothing", {4, 3}, IndexArray{kIgnore, 2, 0, 2},
                         {.label_smoothing = 0.2}, 343),
      cross_entropy_case("cross_entropy_all_ignored", {2, 3}, IndexArray{kIgnore, kIgnore}, {}, 344),
      cross_entropy_case("cross_entropy_full_smoothing_none", {2, 3}, IndexArray{1, 2},
                         {.label_smoothing = 1.0, .reduction = Reduction::None}, 345),
      cross_entropy_case("cross_entropy_custom_ignore_index", {3, 3}, IndexArray{2, 1, 0},
                         {.ignore_index = 1, .label_smoothing = 0.1}, 346),
      cross_entropy_case("cross_entropy_classes_only", {5}, IndexArray(Index{3}), {}, 347),
      cross_entropy_case("cross_entropy_spatial", {2, 3, 2, 2}, IndexArray{{{0, 2}, {1, 1}}, {{2, kIgnore}, {0, 1}}},
                         {.label_smoothing = 0.3, .reduction = Reduction::None}, 348),
      {"cross_entropy_minus_inf_logit",
       [](const auto& x) { return cross_entropy(x[0], IndexArray{0, 2}, {.reduction = Reduction::None}); },
       [] { return V{with_minus_inf(leaf({2, 3}, 349), 1)}; }},

      // nll_loss: linear in log_probs, so of a square.
      {"nll_loss_mean_ignore",
       [](const auto& x) { return nll_loss(mul(x[0], x[0]), IndexArray{1, kIgnore, 0}); },
       [] { return V{leaf({3, 3}, 350)}; }},
      {"nll_loss_none_spatial",
       [](const auto& x) {
         return nll_loss(mul(x[0], x[0]), IndexArray{{0, 2}, {1, 1}}, {.reduction = Reduction::None});
       },
       [] { return V{leaf({2, 3, 2}, 351)}; }},
      {"nll_loss_sum_times_leaf",
       [](const auto& x) { return mul(nll_loss(x[0], IndexArray{2, 0}, {.reduction = Reduction::Sum}), x[1]); },
       [] { return V{leaf({2, 3}, 352), leaf({2}, 353)}; }},

      // kl_div: both arguments, every reduction; zero targets (held constant: the loss is not
      // differentiable in a target at 0).
      OpCase("kl_div_mean", [](const auto& x) { return kl_div(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 360), leaf({2, 3}, 361, 0.1, 1.0)}; }).at_scale([] { return V{leaf({301, 200}, 922), leaf({301, 200}, 923, 0.1, 1.0)}; }),
      {"kl_div_none", [](const auto& x) { return kl_div(x[0], x[1], Reduction::None); },
       [] { return V{leaf({3, 2}, 362), leaf({3, 2}, 363, 0.1, 1.0)}; }},
      {"kl_div_sum", [](const auto& x) { return kl_div(x[0], x[1], Reduction::Sum); },
       [] { return V{leaf({4}, 364), leaf({4}, 365, 0.1, 1.0)}; }},
      {"kl_div_batchmean_squared_input", [](const auto& x) { return kl_div(mul(x[0], x[0]), x[1], Reduction::BatchMean); },
       [] { return V{leaf({3, 2}, 366), leaf({3, 2}, 367, 0.1, 1.0)}; }},
      {"kl_div_zero_targets",
       [](const auto& x) { return kl_div(mul(x[0], x[0]), x[1], Reduction::None); },
       [] {
         Tensor<double> target = constant({2, 3}, 368, 0.1, 1.0);
         target.mutable_value()(0, 1) = 0.0;
         target.mutable_value()(1, 2) = 0.0;
         return V{leaf({2, 3}, 369), target};
       }},

      // mse_loss: both arguments, every reduction.
      {"mse_loss_mean", [](const auto& x) { return mse_loss(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 370), leaf({2, 3}, 371)}; }},
      OpCase("mse_loss_none", [](const auto& x) { return mse_loss(x[0], x[1], Reduction::None); },
       [] { return V{leaf({3, 2}, 372), leaf({3, 2}, 373)}; }).at_scale([] { return V{leaf({301, 200}, 920), leaf({301, 200}, 921)}; }),
      {"mse_loss_sum_constant_target", [](const auto& x) { return mse_loss(x[0], x[1], Reduction::Sum); },
       [] { return V{leaf({4}, 374), constant({4}, 375)}; }},
  };
}

}  // namespace tapegrad::testing
