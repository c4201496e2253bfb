#pragma once
// masked_fill and dropout.
#include <cstdint>

#include "autograd/generator.h"
#include "autograd/tensor.h"

namespace tapegrad {

using Mask = xt::xarray<bool>;

// Where mask is true, the output is value (any value, -inf included) and no gradient flows back;
// elsewhere the output is a. This is PyTorch's masked_fill polarity (true = fill). Attention
// modules take masks where 1 means "may attend" and call masked_fill(scores, xt::equal(mask, 0), -inf)
// (xtensor's `mask == 0` is not elementwise). The mask broadcasts to a's shape (not the other way
// round): e.g. a [batch, 1, 1, keys] padding mask over [batch, heads, queries, keys] scores;
// otherwise ShapeError. The uint8 overload treats every nonzero byte as true. The gradient is 0
// where the output was filled and passes through unchanged elsewhere: masked_fill of the gradient
// with 0, so it differentiates again (create_graph).
template <class T> Tensor<T> masked_fill(const Tensor<T>& a, const Mask& mask, Scalar<T> value,
    CallSite where = std::source_location::current());
template <class T> Tensor<T> masked_fill(const Tensor<T>& a, const xt::xarray<std::uint8_t>& mask, Scalar<T> value,
    CallSite where = std::source_location::current());

// Inverted dropout: in training with p > 0, each element is zeroed with probability p and the
// rest scaled by 1/(1-p); the keep-mask comes from gen (deterministic given its state). Identity
// (and no draw from gen) when !training or p == 0. ValueError unless 0 <= p < 1. An element is kept
// when its uniform draw u in [0, 1) from gen (one float per element, row-major, whatever T is)
// satisfies u >= p: a float and a double model given the same generator drop the same elements.
// The gradient is the same keep-mask and scale applied to the incoming gradient (an op of its own,
// so it differentiates again).
template <class T> Tensor<T> dropout(const Tensor<T>& a, double p, bool training, Generator& gen,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
