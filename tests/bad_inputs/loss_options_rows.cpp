// Rows of docs/bad-inputs.md, section "ops: loss weights, probability targets, log targets", in a
// file of their own so that parallel work on the other ops merges without conflicts.
#include <optional>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

// ---- class weights ---------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, cross_entropy_weight_wrong_length, ShapeError,
              (cross_entropy(zeros({2, 3}), indices({2}, 0), {.weight = zeros({4})})), "cross_entropy", "weight [4]",
              "[3]", "logits [2,3]")
BAD_INPUT_ROW(Ops, nll_loss_weight_not_1d, ShapeError, (nll_loss(zeros({2, 3}), indices({2}, 0), {.weight = zeros({1, 3})})),
              "nll_loss", "weight [1,3]", "[3]", "log_probs [2,3]")
BAD_INPUT_ROW(Ops, cross_entropy_weight_requires_grad, ValueError, ([] {
                GradientTape tape;
                cross_entropy(zeros({2, 3}), indices({2}, 0), {.weight = leaf({3})});
              }()),
              "cross_entropy", "weight [3]", "requires a gradient", "weight.detach()")
BAD_INPUT_ROW(Ops, binary_cross_entropy_weight_does_not_broadcast, ShapeError,
              (binary_cross_entropy(zeros({2, 3}), zeros({2, 3}), Reduction::Mean, std::optional<Tensor<double>>(zeros({2})))),
              "binary_cross_entropy", "weight [2]", "probs [2,3]")
BAD_INPUT_ROW(Ops, bce_with_logits_weight_does_not_broadcast, ShapeError,
              (binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}), Reduction::Mean, std::nullopt,
                                                std::optional<Tensor<double>>(zeros({2, 2, 3})))),
              "binary_cross_entropy_with_logits", "weight [2,2,3]", "logits [2,3]")

// ---- class-probability targets -------------------------------------------------------------
BAD_INPUT_ROW(Ops, cross_entropy_probabilities_shape, ShapeError, (cross_entropy(zeros({2, 3}), zeros({2, 2}))),
              "cross_entropy", "target probabilities [2,2]", "logits [2,3]")
BAD_INPUT_ROW(Ops, cross_entropy_probabilities_ignore_index, ValueError,
              (cross_entropy(zeros({2, 3}), zeros({2, 3}), {.ignore_index = 0})), "cross_entropy", "ignore_index 0",
              "probabilities", "[2,3]")
BAD_INPUT_ROW(Ops, cross_entropy_probabilities_label_smoothing_nan, ValueError,
              (cross_entropy(zeros({2, 3}), zeros({2, 3}), {.label_smoothing = nan})), "cross_entropy",
              "label_smoothing nan", "[2,3]")
BAD_INPUT_ROW(Ops, cross_entropy_probabilities_weight_wrong_length, ShapeError,
              (cross_entropy(zeros({2, 3}), zeros({2, 3}), {.weight = zeros({2})})), "cross_entropy", "weight [2]", "[3]")

// ---- kl_div with log targets ---------------------------------------------------------------
BAD_INPUT_ROW(Ops, kl_div_log_target_shape_mismatch, ShapeError,
              (kl_div(zeros({2, 3}), zeros({2, 1}), Reduction::Mean, true)), "kl_div", "log_input [2,3]",
              "target [2,1]")

}  // namespace
}  // namespace tapegrad::bad_inputs
