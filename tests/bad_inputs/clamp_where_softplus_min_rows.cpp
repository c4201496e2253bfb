// Rows of docs/bad-inputs.md, section "ops: autograd/ops/*.h": clamp, where, softplus and min.
#include <optional>

#include "autograd/ops/all.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

// ---- clamp / where ------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, clamp_no_bound, ValueError, (clamp(zeros({2, 3}), std::nullopt, std::nullopt)), "clamp", "'min'",
              "'max'", "[2,3]")
BAD_INPUT_ROW(Ops, clamp_nan_bound, ValueError, (clamp(zeros({2, 3}), nan, 1.0)), "clamp", "min is nan", "[2,3]")
BAD_INPUT_ROW(Ops, clamp_tensor_bounds_both_undefined, ValueError, (clamp(zeros({2, 3}), undefined(), undefined())),
              "clamp", "'min'", "'max'", "[2,3]")
BAD_INPUT_ROW(Ops, clamp_tensor_bound_does_not_broadcast, ShapeError, (clamp(zeros({2, 3}), zeros({4}), undefined())),
              "clamp", "a [2,3]", "min [4]")
BAD_INPUT_ROW(Ops, clamp_undefined, ValueError, (clamp(undefined(), 0.0, 1.0)), "clamp", "'a'", "undefined")
BAD_INPUT_ROW(Ops, where_condition_does_not_broadcast, ShapeError, (tapegrad::where(mask_of({2}), zeros({2, 3}), zeros({3}))),
              "where", "condition [2]", "a [2,3]", "b [3]")
BAD_INPUT_ROW(Ops, where_undefined_b, ValueError, (tapegrad::where(mask_of({2}), zeros({2}), undefined())), "where", "'b'",
              "undefined")

// ---- softplus -----------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, softplus_zero_beta, ValueError, (softplus(zeros({2}), 0.0)), "softplus", "beta = 0", "[2]")
BAD_INPUT_ROW(Ops, softplus_nan_threshold, ValueError, (softplus(zeros({2}), 1.0, nan)), "softplus", "threshold = nan",
              "[2]")

// ---- min ----------------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, min_of_empty_tensor, ValueError, (min(zeros({0, 3}))), "min", "zero elements", "[0,3]")

}  // namespace
}  // namespace tapegrad::bad_inputs
