#include <limits>

#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

namespace {

constexpr Index kIgnore = -100;

}  // namespace

// The losses' optional arguments (issue 13 part 3). Class weights are constants (x[1], not
// requiring a gradient) for cross_entropy and nll_loss, as in PyTorch; binary cross-entropy's
// weight is differentiable. nll_loss is linear in its input, so it is given a square.
std::vector<OpCase> loss_options_cases() {
  return {
      // class weights: [C] logits with a 0-d target, [N, C] with ignored targets (and all ignored),
      // [N, C, d1, d2]; with and without label smoothing; a negative weight.
      {"cross_entropy_weight_classes_only",
       [](const auto& x) { return cross_entropy(x[0], IndexArray(Index{3}), {.weight = x[1], .label_smoothing = 0.2}); },
       [] { return V{leaf({5}, 601, -2.0, 2.0), constant({5}, 602, 0.2, 2.0)}; }},
      {"cross_entropy_weight_ignore_smoothing_mean",
       [](const auto& x) {
         return cross_entropy(x[0], IndexArray{1, kIgnore, 0, 2}, {.weight = x[1], .label_smoothing = 0.1});
       },
       [] { return V{leaf({4, 3}, 603, -2.0, 2.0), constant({3}, 604, 0.2, 2.0)}; }},
      {"cross_entropy_weight_custom_ignore_sum",
       [](const auto& x) {
         return cross_entropy(x[0], IndexArray{2, 1, 0}, {.weight = x[1], .ignore_index = 1, .reduction = Reduction::Sum});
       },
       [] { return V{leaf({3, 3}, 605, -2.0, 2.0), constant({3}, 606, -1.0, 2.0)}; }},
      {"cross_entropy_weight_all_ignored",
       [](const auto& x) { return cross_entropy(x[0], IndexArray{kIgnore, kIgnore}, {.weight = x[1]}); },
       [] { return V{leaf({2, 3}, 607, -2.0, 2.0), constant({3}, 608, 0.2, 2.0)}; }},
      {"cross_entropy_weight_spatial_none",
       [](const auto& x) {
         return cross_entropy(x[0], IndexArray{{{0, 2}, {1, 1}}, {{2, kIgnore}, {0, 1}}},
                              {.weight = x[1], .label_smoothing = 0.3, .reduction = Reduction::None});
       },
       [] { return V{leaf({2, 3, 2, 2}, 609, -2.0, 2.0), constant({3}, 610, 0.2, 2.0)}; }},
      {"nll_loss_weight_classes_only",
       [](const auto& x) { return nll_loss(mul(x[0], x[0]), IndexArray(Index{1}), {.weight = x[1]}); },
       [] { return V{leaf({3}, 611), constant({3}, 612, 0.2, 2.0)}; }},
      {"nll_loss_weight_ignore_mean",
       [](const auto& x) { return nll_loss(mul(x[0], x[0]), IndexArray{1, kIgnore, 0}, {.weight = x[1]}); },
       [] { return V{leaf({3, 3}, 613), constant({3}, 614, 0.2, 2.0)}; }},
      {"nll_loss_weight_spatial_none",
       [](const auto& x) {
         return nll_loss(mul(x[0], x[0]), IndexArray{{{0, 2}, {kIgnore, 1}}, {{2, 2}, {0, 1}}},
                         {.weight = x[1], .reduction = Reduction::None});
       },
       [] { return V{leaf({2, 3, 2, 2}, 615), constant({3}, 616, 0.2, 2.0)}; }},
      // binary cross-entropy's weight, broadcast, differentiable.
      {"binary_cross_entropy_weight_mean",
       [](const auto& x) { return binary_cross_entropy(x[0], x[1], Reduction::Mean, x[2]); },
       [] { return V{leaf({2, 3}, 617, 0.1, 0.9), leaf({2, 3}, 618, 0.0, 1.0), leaf({2, 1}, 619, 0.5, 2.0)}; }},
      {"bce_with_logits_weight_pos_weight_none",
       [](const auto& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::None, x[2], x[3]); },
       [] {
         return V{leaf({2, 3}, 620, -3.0, 3.0), leaf({2, 3}, 621, 0.0, 1.0), leaf({3}, 622, 0.5, 2.0),
                  leaf({2, 3}, 623, -1.0, 2.0)};
       }},
      // class-probability targets: logits, target and weight all differentiable, as PyTorch's.
      {"cross_entropy_probabilities_classes_only",
       [](const auto& x) { return cross_entropy(x[0], x[1], {.weight = x[2], .label_smoothing = 0.2}); },
       [] { return V{leaf({5}, 624, -2.0, 2.0), leaf({5}, 625, 0.0, 1.0), leaf({5}, 626, 0.2, 2.0)}; }},
      {"cross_entropy_probabilities_mean",
       [](const auto& x) { return cross_entropy(x[0], x[1]); },
       [] { return V{leaf({3, 4}, 627, -2.0, 2.0), leaf({3, 4}, 628, 0.0, 1.0)}; }},
      {"cross_entropy_probabilities_spatial_none",
       [](const auto& x) {
         return cross_entropy(x[0], x[1], {.weight = x[2], .label_smoothing = 0.3, .reduction = Reduction::None});
       },
       [] { return V{leaf({2, 3, 2, 2}, 629, -2.0, 2.0), leaf({2, 3, 2, 2}, 630, 0.0, 1.0), constant({3}, 631, 0.2, 2.0)}; }},
      // kl_div with log targets: both arguments, a 0-d pair, and a -inf target held constant.
      {"kl_div_log_target_batchmean", [](const auto& x) { return kl_div(x[0], x[1], Reduction::BatchMean, true); },
       [] { return V{leaf({3, 2}, 632, -2.0, 0.0), leaf({3, 2}, 633, -2.0, 0.0)}; }},
      {"kl_div_log_target_0d", [](const auto& x) { return kl_div(x[0], x[1], Reduction::Mean, true); },
       [] { return V{leaf({}, 634, -2.0, 0.0), leaf({}, 635, -2.0, 0.0)}; }},
      {"kl_div_log_target_minus_inf_none",
       [](const auto& x) { return kl_div(mul(x[0], x[0]), x[1], Reduction::None, true); },
       [] {
         Tensor<double> target = constant({2, 3}, 636, -2.0, 0.0);
         target.mutable_value()(1, 0) = -std::numeric_limits<double>::infinity();
         return V{leaf({2, 3}, 637), target};
       }},
  };
}

}  // namespace tapegrad::testing
