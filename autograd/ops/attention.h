#pragma once
// The fused middle of scaled dot-product attention: scale, mask and softmax in one pass over each
// row of the scores, equal (up to rounding of the scale) to
//   softmax(masked_fill(scores * scale, may_attend.blocked(), lowest()), -1)
// which is what attention modules write out (the reference designs' PyTorch code fills with -1e9):
//   - over the last axis; a row with at least one allowed position gives the masked positions
//     weight exactly 0;
//   - a row with no allowed position (every key masked) gets uniform weights 1/n, as the
//     composition does with a finite fill value, and no gradient;
//   - backward: dx = scale * y * (g - sum_j g_j y_j) on rows with an allowed position, 0 elsewhere;
//     the forward saves only its output and one flag per fully masked row. The backward is an op
//     of its own, differentiable again (create_graph) in g and y.
// may_attend (true = may attend; the AttendMask type enforces that polarity) broadcasts to the scores' shape, e.g. [batch, 1, keys] over
// [batch, queries, keys]; it is read in place, never expanded. ShapeError when it does not
// broadcast or the scores are 0-dim; ValueError for a non-finite scale.
#include <optional>

#include "autograd/base/call_site.h"
#include "autograd/ops/masking.h"
#include "autograd/core/tensor.h"

namespace tapegrad {

template <class T>
Tensor<T> attention_softmax(const Tensor<T>& scores, const std::optional<AttendMask>& may_attend, Scalar<T> scale,
                            CallSite where = std::source_location::current());

}  // namespace tapegrad
