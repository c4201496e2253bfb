#include "nn/transformer/masks.h"

namespace tapegrad::nn::transformer {

namespace {

void require_tokens(const IndexArray& tokens, const char* who) {
  if (tokens.dimension() != 2) {
    throw ShapeError(std::string(who) + ": tokens must be [batch, seq], got " + format_shape(tokens.shape()));
  }
}

}  // namespace

Mask make_src_mask(const IndexArray& src, Index pad) {
  require_tokens(src, "make_src_mask");
  const std::size_t batch = src.shape()[0], seq = src.shape()[1];
  Mask mask = Mask::from_shape({batch, 1, seq});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t j = 0; j < seq; ++j) mask(b, 0, j) = src(b, j) != pad;
  return mask;
}

Mask make_tgt_mask(const IndexArray& tgt, Index pad) {
  require_tokens(tgt, "make_tgt_mask");
  const std::size_t batch = tgt.shape()[0], seq = tgt.shape()[1];
  Mask mask = Mask::from_shape(detail::allocatable({batch, seq, seq}, sizeof(bool), "make_tgt_mask", "the mask"));
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < seq; ++i)
      for (std::size_t j = 0; j < seq; ++j) mask(b, i, j) = j <= i && tgt(b, j) != pad;
  return mask;
}

}  // namespace tapegrad::nn::transformer
