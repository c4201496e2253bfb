#pragma once
// masked_fill and dropout.
#include <cstdint>
#include <string_view>

#include "autograd/generator.h"
#include "autograd/tensor.h"

namespace tapegrad {

using Mask = xt::xarray<bool>;

// Where mask is true, the output is value (any value, -inf included) and no gradient flows back;
// elsewhere the output is a. This is PyTorch's masked_fill polarity (true = fill). Attention
// modules take masks where 1 means "may attend" and call masked_fill(scores, xt::equal(mask, 0), -inf)
// (xtensor's `mask == 0` is not elementwise). a and the mask broadcast together, as PyTorch: e.g.
// a [batch, 1, 1, keys] padding mask over [batch, heads, queries, keys] scores, or a [3] input
// under a [2,3] mask (the output is [2,3]); shapes that do not broadcast: ShapeError naming both.
// The uint8 overload treats every nonzero byte as true. The gradient is 0 where the output was
// filled and passes through unchanged elsewhere (summed back to a's shape when a was broadcast):
// masked_fill of the gradient with 0, so it differentiates again (create_graph).
template <class T> Tensor<T> masked_fill(const Tensor<T>& a, const Mask& mask, Scalar<T> value,
    CallSite where = std::source_location::current());
template <class T> Tensor<T> masked_fill(const Tensor<T>& a, const xt::xarray<std::uint8_t>& mask, Scalar<T> value,
    CallSite where = std::source_location::current());

// Inverted dropout: in training with p > 0, each element is zeroed with probability p and the
// rest scaled by 1/(1-p); the keep-mask comes from gen (deterministic given its state). Identity
// (and no draw from gen) when !training or p == 0; all zeros with a zero gradient (and no draw)
// in training with p == 1, as PyTorch. ValueError unless 0 <= p <= 1 (check_dropout_p). An
// element is kept when its uniform draw u in [0, 1) from gen (one float per element, row-major,
// whatever T is) satisfies u >= p: a float and a double model given the same generator drop the
// same elements. The gradient is the same keep-mask and scale applied to the incoming gradient
// (an op of its own, so it differentiates again).
template <class T> Tensor<T> dropout(const Tensor<T>& a, double p, bool training, Generator& gen,
    CallSite where = std::source_location::current());

// dropout's rule for p, in one place for the op and nn::Dropout: 0 <= p <= 1 (PyTorch's), else
// ValueError "<op>: p must be in [0, 1], got p = <p>" (NaN included).
void check_dropout_p(double p, std::string_view op);

}  // namespace tapegrad
