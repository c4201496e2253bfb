#pragma once
// masked_fill and dropout, and the two mask types: Mask (true = fill) and AttendMask (true = may attend).
#include <cstdint>
#include <string_view>
#include <utility>

#include "autograd/base/generator.h"
#include "autograd/core/tensor.h"

namespace tapegrad {

// A fill mask: true = "fill here" (masked_fill's polarity, PyTorch's).
using Mask = xt::xarray<bool>;

// An attention mask: true = "may attend" (The Annotated Transformer's polarity and the seeds'
// labml code), the one every nn attention module, mask builder and attention_softmax takes. A
// distinct type so that the two polarities cannot be mixed up silently: it is built only
// explicitly, and it does not convert to Mask, so it cannot reach masked_fill, nor a Mask reach a
// module. Inside a module, masked_fill(scores, mask.blocked(), -inf) is where the polarity turns.
class AttendMask {
 public:
  // true = may attend.
  explicit AttendMask(Mask may_attend) : may_attend_(std::move(may_attend)) {}
  // Nonzero = may attend, as The Annotated Transformer's uint8 masks (subsequent_mask(n) == 0,
  // (src != pad).unsqueeze(-2)).
  explicit AttendMask(const xt::xarray<std::uint8_t>& may_attend);
  // From a mask where true = "blocked": PyTorch nn.MultiheadAttention's boolean attn_mask and
  // key_padding_mask, and the reference designs' masked_fill_(mask, ...).
  static AttendMask blocking(const Mask& blocked);

  const Mask& may_attend() const { return may_attend_; }
  // The fill mask for masked_fill: true where the key may not be attended to.
  Mask blocked() const;

  // Attend where both allow it, e.g. a padding mask && a look-ahead mask; the shapes broadcast
  // (NumPy's rule), else ShapeError naming both.
  friend AttendMask operator&&(const AttendMask& a, const AttendMask& b);

 private:
  Mask may_attend_;
};

// Where mask is true, the output is value (any value, -inf included) and no gradient flows back;
// elsewhere the output is a. This is PyTorch's masked_fill polarity (true = fill). An attention
// mask (AttendMask) does not convert to Mask: pass its blocked(). a and the mask broadcast
// together, as PyTorch: e.g. a [batch, 1, 1, keys] padding mask over [batch, heads, queries, keys]
// scores, or a [3] input under a [2,3] mask (the output is [2,3]); shapes that do not broadcast:
// ShapeError naming both. The gradient is 0 where the output was filled and passes through
// unchanged elsewhere (summed back to a's shape when a was broadcast): masked_fill of the gradient
// with 0, so it differentiates again (create_graph).
template <class T> Tensor<T> masked_fill(const Tensor<T>& a, const Mask& mask, Scalar<T> value,
    CallSite where = std::source_location::current());
// The same with the fill value a 0-d tensor, which may require a gradient of its own (PyTorch
// allows it): dL/dvalue is the sum of g over the filled positions of the output (all of them
// when a was broadcast up to the mask's shape), and dL/da as above. A value of any other shape,
// even [1], is a ShapeError naming masked_fill, value and its shape (PyTorch's rule); an undefined
// value is a ValueError.
template <class T> Tensor<T> masked_fill(const Tensor<T>& a, const Mask& mask, const Tensor<T>& value,
    CallSite where = std::source_location::current());
// Deleted on purpose. PyTorch deprecated uint8 masks in masked_fill (bool only), and a uint8 mask
// is usually The Annotated Transformer's 1 = "may attend", which filling where nonzero would
// silently invert. Say which polarity the bytes have: masked_fill(a, Mask(xt::not_equal(m, 0)), v)
// for a fill mask, or AttendMask(m) (equivalently Mask(xt::equal(m, 0)) as the fill mask) for an
// attend mask.
template <class T> Tensor<T> masked_fill(const Tensor<T>& a, const xt::xarray<std::uint8_t>& mask, Scalar<T> value,
    CallSite where = std::source_location::current()) = delete;

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

// Where a tensor's rows sit in a batch split over data-parallel processes: axis 0 holds rows
// [first, first + a.shape()[0]) of a batch of `total` rows.
struct BatchRows {
  std::size_t first = 0;
  std::size_t total = 0;
};
// dropout of a's part of the batch: the keep-mask is the rows [first, first + a.shape()[0]) of the
// mask dropout would draw for the whole [total, ...] batch, and gen advances by the whole batch's
// draw. So a row's mask depends on its index in the batch, not on how the batch is split, and
// processes holding different rows stay in step. ShapeError for a 0-d a or rows beyond total.
template <class T> Tensor<T> dropout(const Tensor<T>& a, double p, bool training, Generator& gen,
    const BatchRows& rows, CallSite where = std::source_location::current());

// dropout's rule for p, in one place for the op and nn::Dropout: 0 <= p <= 1 (PyTorch's), else
// ValueError "<op>: p must be in [0, 1], got p = <p>" (NaN included).
void check_dropout_p(double p, std::string_view op);

}  // namespace tapegrad
