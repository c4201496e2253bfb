#pragma once
// The 3-D masks the Transformer stacks take, from token ids. POLARITY: true = "may attend" (the
// opposite of seed 004's masked_fill_(mask, ...); the same as The Annotated Transformer's).
#include "autograd/ops/masking.h"
#include "autograd/tensor.h"

namespace tapegrad::nn::transformer {

// src [batch, seq_s] -> [batch, 1, seq_s]: true where src != pad. Broadcasts over the queries of
// the encoder's self-attention and of the decoder's source-target attention.
Mask make_src_mask(const IndexArray& src, Index pad);

// tgt [batch, seq_t] -> [batch, seq_t, seq_t]: query i may attend to key j when j <= i (causal)
// and tgt[b, j] != pad.
Mask make_tgt_mask(const IndexArray& tgt, Index pad);

}  // namespace tapegrad::nn::transformer
