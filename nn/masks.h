#pragma once
// Attention masks. Polarity everywhere in tapegrad's nn: true (1) means "may attend", false (0)
// means "masked out" (the seeds' labml code and The Annotated Transformer use this polarity;
// PyTorch's nn.MultiheadAttention boolean masks and seed 004's masked_fill_(mask, ...) use the
// opposite one).
#include "autograd/ops/masking.h"
#include "autograd/tensor.h"

namespace tapegrad::nn {

// tokens [batch, seq] -> [batch, 1, 1, seq]: true where the token is not `pad`. Broadcasts over
// batch-first attention scores [batch, heads, seq_q, seq_k] (seed 002).
Mask create_padding_mask(const IndexArray& tokens, Index pad = 0);

// [n, n]: true on and below the diagonal, so query i may attend to keys 0..i (seed 002's
// look-ahead mask, The Annotated Transformer's subsequent_mask without its leading axis).
Mask create_look_ahead_mask(std::size_t n);

}  // namespace tapegrad::nn
