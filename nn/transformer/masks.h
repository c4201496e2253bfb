#pragma once
// The 3-D masks the Transformer stacks take, from token ids: nn/masks.h's padding and look-ahead
// masks in the stacks' layout. POLARITY: true = "may attend" (The Annotated Transformer's; the
// opposite of the reference Transformer's masked_fill_(mask, ...)), enforced by the AttendMask type.
#include "autograd/ops/masking.h"
#include "autograd/core/tensor.h"

namespace tapegrad::nn::transformer {

// src [batch, seq_s] -> [batch, 1, seq_s]: true where src != pad (create_padding_mask without its
// heads axis). Broadcasts over the queries of the encoder's self-attention and of the decoder's
// source-target attention.
AttendMask make_src_mask(const IndexArray& src, Index pad);

// tgt [batch, seq_t] -> [batch, seq_t, seq_t]: query i may attend to key j when j <= i (causal)
// and tgt[b, j] != pad (make_src_mask && create_look_ahead_mask).
AttendMask make_tgt_mask(const IndexArray& tgt, Index pad);

}  // namespace tapegrad::nn::transformer
