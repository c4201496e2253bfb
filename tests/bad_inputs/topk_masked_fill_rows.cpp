// Rows of docs/bad-inputs.md, section "ops: topk, masked_fill with a tensor value".
#include "autograd/ops/all.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

// ---- topk ---------------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, topk_k_above_size, ValueError, (topk(zeros({2, 4}), 5)), "topk", "k = 5", "[0, 4]", "dim -1",
              "[2,4]")
BAD_INPUT_ROW(Ops, topk_negative_k, ValueError, (topk(zeros({2, 4}), -1, 0)), "topk", "k = -1", "[0, 2]", "dim 0",
              "[2,4]")
BAD_INPUT_ROW(Ops, topk_dim_out_of_range, ValueError, (topk(zeros({2, 4}), 1, 2)), "topk", "axis 2", "[2,4]")
BAD_INPUT_ROW(Ops, topk_0d_k_above_one, ValueError, (topk(zeros({}), 2)), "topk", "k = 2", "[0, 1]", "[]")

// ---- masked_fill with a tensor value -------------------------------------------------------
BAD_INPUT_ROW(Ops, masked_fill_value_not_0d, ShapeError, (masked_fill(zeros({2, 3}), Mask::from_shape({2, 3}), zeros({1}))),
              "masked_fill", "value", "0-d", "[1]", "[2,3]")
BAD_INPUT_ROW(Ops, masked_fill_undefined_value, ValueError, (masked_fill(zeros({2, 3}), Mask::from_shape({2, 3}), undefined())),
              "masked_fill", "'value'", "undefined")

}  // namespace
}  // namespace tapegrad::bad_inputs
