#pragma once
// An encoder-decoder Transformer built from the reference Transformer's stacks, arranged as The Annotated
// Transformer's EncoderDecoder (so the copy task runs on it):
//
// Transformer(TransformerOptions, gen) (options.h: named fields with defaults), or in the reference Transformer's order
// Transformer(src_vocab_size, tgt_vocab_size, max_len, pad_idx, d_model, N, d_ff, heads_num,
//             dropout_rate, layer_norm_eps, gen, norm_first = false), children:
//   encoder    TransformerEncoder(src_vocab_size, ...)
//   decoder    TransformerDecoder(tgt_vocab_size, ...)
//   generator  OutputGenerator: proj = Linear(d_model, tgt_vocab_size), then log_softmax
//
//   encode(src [batch, seq_s], src_mask [batch, 1, seq_s])            -> memory [batch, seq_s, d_model]
//   decode(memory, src_mask, tgt [batch, seq_t], tgt_mask [batch, seq_t, seq_t])
//                                                                     -> [batch, seq_t, d_model]
//   forward(src, tgt, src_mask, tgt_mask) = decode(encode(src, src_mask), src_mask, tgt, tgt_mask)
//   generator(x [batch, seq_t, d_model])                              -> log-probs [batch, seq_t, tgt_vocab_size]
//
// MASK POLARITY: true/1 = "may attend" — the opposite of the reference Transformer's masked_fill_(mask, ...);
// the AttendMask type enforces it (a fill-polarity Mask does not convert).
// make_src_mask / make_tgt_mask (masks.h) build the masks from token ids. Masks are optional.
//
// Parameters keep each module's own initialisation (embeddings N(0, 1), Linear as PyTorch,
// attention heads xavier_uniform); The Annotated Transformer re-initialises every matrix with
// xavier_uniform_, which a caller can do over parameters().
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nn/linear.h"
#include "nn/transformer/decoder.h"
#include "nn/transformer/encoder.h"
#include "nn/transformer/masks.h"
#include "nn/transformer/multi_head_attention.h"
#include "nn/transformer/options.h"
#include "nn/unary_module.h"

namespace tapegrad::nn::transformer {

// The Annotated Transformer's Generator: x [..., d_model] -> log_softmax(proj(x), last axis)
// [..., vocab]. Named OutputGenerator in C++ because tapegrad::Generator is the random number
// generator; its type_name() and child names are the PyTorch ones.
template <class T>
class OutputGenerator : public UnaryModule<T> {
 public:
  OutputGenerator(std::size_t d_model, std::size_t vocab, Generator& gen);

  std::string type_name() const override { return "Generator"; }
  Tensor<T> forward(const Tensor<T>& x) override;
  const Linear<T>& proj() const { return *proj_; }

 private:
  std::shared_ptr<Linear<T>> proj_;
};

template <class T>
class Transformer : public Module<T> {
 public:
  Transformer(const TransformerOptions& options, Generator& gen);
  // The reference Transformer's argument order (options.h names them instead).
  Transformer(std::size_t src_vocab_size, std::size_t tgt_vocab_size, std::size_t max_len, Index pad_idx,
              std::size_t d_model, std::size_t N, std::size_t d_ff, std::size_t heads_num, double dropout_rate,
              double layer_norm_eps, Generator& gen, bool norm_first = false)
      : Transformer(TransformerOptions{src_vocab_size, tgt_vocab_size, max_len, pad_idx, N,
                                       {d_model, d_ff, heads_num, dropout_rate, layer_norm_eps, norm_first}},
                    gen) {}

  std::string type_name() const override { return "Transformer"; }

  Tensor<T> encode(const IndexArray& src, const std::optional<AttendMask>& src_mask = std::nullopt);
  Tensor<T> decode(const Tensor<T>& memory, const std::optional<AttendMask>& src_mask, const IndexArray& tgt,
                   const std::optional<AttendMask>& tgt_mask = std::nullopt);
  Tensor<T> forward(const IndexArray& src, const IndexArray& tgt, const std::optional<AttendMask>& src_mask = std::nullopt,
                    const std::optional<AttendMask>& tgt_mask = std::nullopt);
  // forward, then the hooks (nn/module.h), which see no inputs (tokens are not tensors). encode,
  // decode and generator run the children's hooks but not the Transformer's own.
  Tensor<T> operator()(const IndexArray& src, const IndexArray& tgt, const std::optional<AttendMask>& src_mask = std::nullopt,
                       const std::optional<AttendMask>& tgt_mask = std::nullopt) {
    return this->run_hooks(forward(src, tgt, src_mask, tgt_mask));
  }
  // Log-probabilities over the target vocabulary.
  Tensor<T> generator(const Tensor<T>& x) { return (*generator_)(x); }

  const TransformerEncoder<T>& encoder() const { return *encoder_; }
  const TransformerDecoder<T>& decoder() const { return *decoder_; }

 private:
  std::shared_ptr<TransformerEncoder<T>> encoder_;
  std::shared_ptr<TransformerDecoder<T>> decoder_;
  std::shared_ptr<OutputGenerator<T>> generator_;
};

extern template class OutputGenerator<float>;
extern template class OutputGenerator<double>;
extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace tapegrad::nn::transformer
