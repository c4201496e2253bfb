// Rows of docs/bad-inputs.md, section "ops: AttendMask": the mask type of autograd/ops/masking.h,
// which is not an op (the ops' rows are their specs' error inputs).
#include "autograd/ops/masking.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

BAD_INPUT_ROW(Masks, attend_mask_and_does_not_broadcast, ShapeError,
              (AttendMask(mask_of({2})) && AttendMask(mask_of({3}))), "AttendMask && AttendMask", "[2]", "[3]")

}  // namespace
}  // namespace tapegrad::bad_inputs
