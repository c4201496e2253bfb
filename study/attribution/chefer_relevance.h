#pragma once
// Relevance propagation through attention, Chefer, Gur & Wolf 2021, "Generic Attention-model
// Explainability for Interpreting Bi-Modal and Encoder-Decoder Transformers" (ICCV), §3.
// Equation numbers are the paper's, as the authors' code (Transformer-MM-Explainability) cites them:
// rule 5 (Ā), rules 6-7 (self-attention), Eqs. 8-9 (normalisation), rule 10 (cross-attention).
//
// Every attention map enters through Eq. 5: Ā = E_h[(∇A ⊙ A)^+], the mean over heads of the
// positive part of A ⊙ dL/dA (clip per head, then mean), computed per sequence of the batch.
// Relevance maps start as R_xx = I (each token is its own context) and R_xy = 0.
//
// Notation here: s = the encoder's (source) tokens, q = the decoder's (query/target) tokens.
// All lists are in FORWARD order, each map [batch, heads, seq_q, seq_k] with its dL/dA of the
// same shape (study/attribution/layer_maps.h).
#include <span>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

namespace tapegrad::study {

// One kind of attention module's maps and their gradients, forward order, same count.
template <class T>
struct AttentionAndGradient {
  std::span<const xt::xarray<T>> attention;
  std::span<const xt::xarray<T>> gradients;
};

// Self-attention only (an encoder, or a decoder-only model): Eq. 6, R_ss += Ā_l · R_ss for each
// layer in forward order, from R_ss = I, i.e. R_ss = (I + Ā_L) ··· (I + Ā_1), not normalised.
// Maps [batch, heads, seq, seq]; returns R_ss [batch, seq, seq], row i = relevance of each input
// token to output token i. ValueError for an empty list or a different number of gradient maps;
// ShapeError for non-square maps, batch or seq that differ between layers, or a gradient whose
// shape differs from its map's.
template <class T>
xt::xarray<T> chefer_self_attention_relevance(AttentionAndGradient<T> self_attention);

template <class T>
struct EncoderDecoderRelevance {
  xt::xarray<T> encoder;  // R_ss [batch, src, src]: the encoder's self-attention relevance
  xt::xarray<T> decoder;  // R_qq [batch, tgt, tgt]: the decoder's self-attention relevance
  xt::xarray<T> cross;    // R_qs [batch, tgt, src]: row i = relevance of each source token to target token i
};

// An encoder-decoder model (§3.3): first every encoder layer, Eq. 6 on R_ss; then, decoder layer
// by decoder layer, its self-attention (Eqs. 6 and 7: R_qq += Ā · R_qq and R_qs += Ā · R_qs,
// with the same Ā; neither reads the other) followed by its cross-attention (Eq. 10):
//   R_qs += (R̄_qq)^T · Ā · R̄_ss,
// where Ā comes from the cross map [batch, heads, tgt, src] and R̄_xx is Eqs. 8-9's normalisation:
// R̂ = R_xx - I (the accumulated context without the token itself), each row divided by its sum,
// then I added back. A row of R̂ that sums to 0 (a token that took context from nothing yet) stays
// 0, so R̄ keeps that token's identity row. Chefer's code divides by zero there and then zeroes
// every NaN of the product, which drops the whole layer's cross-attention term; that is not the
// paper's intent and is not reproduced. The bi-modal rule that feeds the cross term back into
// the other modality's self-relevance does not apply: the encoder never sees the decoder.
//
// encoder_self [batch, h, src, src], decoder_self [batch, h, tgt, tgt] and cross
// [batch, h, tgt, src], each non-empty, with as many cross maps as decoder self maps (one of
// each per decoder layer). Errors as chefer_self_attention_relevance, plus ValueError when the
// decoder and cross lists differ in length and ShapeError when the cross maps' batch, tgt or src
// do not match the decoder's and encoder's.
template <class T>
EncoderDecoderRelevance<T> chefer_encoder_decoder_relevance(AttentionAndGradient<T> encoder_self,
                                                            AttentionAndGradient<T> decoder_self,
                                                            AttentionAndGradient<T> cross);

}  // namespace tapegrad::study
