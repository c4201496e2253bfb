#pragma once
// Attention masks. Polarity everywhere in tapegrad's nn: true means "may attend", false "masked
// out" (labml.ai's code and The Annotated Transformer), and the type says so: these return
// AttendMask (autograd/ops/masking.h), which every attention module takes and which neither comes
// from nor turns into masked_fill's Mask (true = fill) implicitly. A PyTorch nn.MultiheadAttention
// boolean mask, or the reference Transformer's masked_fill_(mask, ...) mask, comes in through AttendMask::blocking.
#include "autograd/ops/masking.h"
#include "autograd/core/tensor.h"

namespace tapegrad::nn {

// tokens [batch, seq] -> [batch, 1, 1, seq]: true where the token is not `pad`. Broadcasts over
// batch-first attention scores [batch, heads, seq_q, seq_k] (the batch-first reference).
AttendMask create_padding_mask(const IndexArray& tokens, Index pad = 0);

// [n, n]: true on and below the diagonal, so query i may attend to keys 0..i (the batch-first reference's
// look-ahead mask, The Annotated Transformer's subsequent_mask without its leading axis).
AttendMask create_look_ahead_mask(std::size_t n);

// ShapeError "<who>: tokens must be [batch, seq], got <shape>" unless tokens has 2 axes: the mask
// builders' one check, shared with nn/transformer/masks.h's.
void require_token_batch(const IndexArray& tokens, const char* who);

}  // namespace tapegrad::nn
