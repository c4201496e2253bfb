#include "nn/masks.h"

namespace tapegrad::nn {

Mask create_padding_mask(const IndexArray& tokens, Index pad) {
  if (tokens.dimension() != 2) {
    throw ShapeError("create_padding_mask: tokens must be [batch, seq], got " + format_shape(tokens.shape()));
  }
  const std::size_t batch = tokens.shape()[0], seq = tokens.shape()[1];
  Mask mask = Mask::from_shape({batch, 1, 1, seq});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t j = 0; j < seq; ++j) mask(b, 0, 0, j) = tokens(b, j) != pad;
  return mask;
}

Mask create_look_ahead_mask(std::size_t n) {
  Mask mask = Mask::from_shape(detail::allocatable({n, n}, sizeof(bool), "create_look_ahead_mask", "the mask"));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) mask(i, j) = j <= i;
  return mask;
}

}  // namespace tapegrad::nn
