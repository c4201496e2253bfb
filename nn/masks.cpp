#include "nn/masks.h"

#include <string>

#include "autograd/base/checks.h"

namespace tapegrad::nn {

void require_token_batch(const IndexArray& tokens, const char* who) {
  if (tokens.dimension() != 2) {
    throw ShapeError(std::string(who) + ": tokens must be [batch, seq], got " + format_shape(tokens.shape()));
  }
}

AttendMask create_padding_mask(const IndexArray& tokens, Index pad) {
  require_token_batch(tokens, "create_padding_mask");
  const std::size_t batch = tokens.shape()[0], seq = tokens.shape()[1];
  Mask mask = Mask::from_shape({batch, 1, 1, seq});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t j = 0; j < seq; ++j) mask(b, 0, 0, j) = tokens(b, j) != pad;
  return AttendMask(std::move(mask));
}

AttendMask create_look_ahead_mask(std::size_t n) {
  Mask mask = Mask::from_shape(allocatable({n, n}, sizeof(bool), "create_look_ahead_mask", "the mask"));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) mask(i, j) = j <= i;
  return AttendMask(std::move(mask));
}

}  // namespace tapegrad::nn
