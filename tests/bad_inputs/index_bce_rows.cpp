// Rows of docs/bad-inputs.md, section "ops: gather, scatter_add, index_fill, binary cross-entropy".
#include "autograd/ops/all.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

// ---- gather / scatter_add / index_fill ------------------------------------------------------
BAD_INPUT_ROW(Ops, gather_index_out_of_range, ValueError, (gather(zeros({2, 3}), 1, indices({2, 1}, 3))), "gather",
              "index 3", "position [0,0]", "[0, 3)", "[2,3]")
BAD_INPUT_ROW(Ops, gather_negative_index, ValueError, (gather(zeros({2, 3}), 1, indices({2, 1}, -1))), "gather",
              "index -1", "[0, 3)")
BAD_INPUT_ROW(Ops, gather_index_rank, ShapeError, (gather(zeros({2, 3}), 1, indices({2}, 0))), "gather", "[2]",
              "[2,3]", "dims")
BAD_INPUT_ROW(Ops, gather_index_larger_off_dim, ShapeError, (gather(zeros({2, 3}), 1, indices({3, 1}, 0))), "gather",
              "[3,1]", "[2,3]")
BAD_INPUT_ROW(Ops, gather_dim_out_of_range, ValueError, (gather(zeros({2, 3}), 2, indices({1, 1}, 0))), "gather",
              "axis 2", "[2,3]")
BAD_INPUT_ROW(Ops, scatter_add_index_out_of_range, ValueError,
              (scatter_add(zeros({3, 3}), 0, indices({1, 1}, 3), zeros({3, 3}))), "scatter_add", "index 3", "[0, 3)",
              "self [3,3]")
BAD_INPUT_ROW(Ops, scatter_add_index_larger_than_src, ShapeError,
              (scatter_add(zeros({3, 3}), 0, indices({1, 3}, 0), zeros({3, 2}))), "scatter_add", "[1,3]", "src [3,2]")
BAD_INPUT_ROW(Ops, scatter_add_undefined_src, ValueError, (scatter_add(zeros({3}), 0, indices({1}, 0), undefined())),
              "scatter_add", "'src'", "undefined")
BAD_INPUT_ROW(Ops, index_fill_out_of_range, ValueError, (index_fill(zeros({2, 3}), 1, indices({1}, 3), 1.0)),
              "index_fill", "index 3", "[-3, 3)", "[2,3]")
BAD_INPUT_ROW(Ops, index_fill_2d_index, ShapeError, (index_fill(zeros({2, 3}), 1, indices({1, 1}, 0), 1.0)),
              "index_fill", "0-d or 1-D", "[1,1]", "[2,3]")

// ---- binary_cross_entropy ------------------------------------------------------------------
BAD_INPUT_ROW(Ops, binary_cross_entropy_prob_above_one, ValueError,
              (binary_cross_entropy(Tensor<double>(xt::xarray<double>{0.5, 1.5}), zeros({2}))), "binary_cross_entropy",
              "[0, 1]", "1.5", "position [1]", "[2]")
BAD_INPUT_ROW(Ops, binary_cross_entropy_shape_mismatch, ShapeError, (binary_cross_entropy(zeros({2, 3}), zeros({3}))),
              "binary_cross_entropy", "target [3]", "probs [2,3]")
BAD_INPUT_ROW(Ops, binary_cross_entropy_batchmean, ValueError,
              (binary_cross_entropy(zeros({2}), zeros({2}), Reduction::BatchMean)), "binary_cross_entropy",
              "BatchMean", "[2]")
BAD_INPUT_ROW(Ops, bce_with_logits_shape_mismatch, ShapeError,
              (binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 1}))), "binary_cross_entropy_with_logits",
              "target [2,1]", "logits [2,3]")
BAD_INPUT_ROW(Ops, bce_with_logits_pos_weight_does_not_broadcast, ShapeError,
              (binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}), Reduction::Mean,
                                                std::optional<Tensor<double>>(zeros({2})))),
              "binary_cross_entropy_with_logits", "pos_weight [2]", "[2,3]")

}  // namespace
}  // namespace tapegrad::bad_inputs
