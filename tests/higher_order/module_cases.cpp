// Every nn module as an OpCase, so test_higher_order gives each the checks it gives every op:
// gradcheck, gradgradcheck, the same first derivative with and without create_graph, and jvp
// against vjp, in float64, with respect to the module's tensor inputs and all its parameters.
// Token inputs are fixed IndexArrays. Cases named *_train run in training mode with dropout
// active, its streams rewound on every call. Sizes keep each module's four checks well under a
// second (gradgradcheck grows with the square of the parameter count); the whole Transformer with
// its loss takes one or two.
#include <memory>
#include <type_traits>
#include <utility>

#include "autograd/ops/loss.h"
#include "tests/ops/op_case.h"
#include "nn/activation.h"
#include "nn/containers.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/functional_call.h"
#include "nn/label_smoothing.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/labml/prepare_for_multi_head_attention.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mha/multi_head_attention.h"
#include "nn/mha/scaled_dot_product_attention.h"
#include "nn/positional_encoding.h"
#include "nn/transformer/embedding.h"
#include "nn/transformer/masks.h"
#include "nn/transformer/sublayer_connection.h"
#include "nn/transformer/transformer.h"
#include "tests/support/nn_support.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;
namespace tf = nn::transformer;

namespace {

// Small enough that gradgradcheck (quadratic in the parameter count) stays well under a second per
// layer: d_model 4, 2 heads of d_k 2, d_ff 8, vocabulary 5, batch 2, sequences of 3 (or 4).
constexpr std::size_t kDModel = 4, kHeads = 2, kDFF = 8, kVocab = 5;
constexpr Index kPad = 0;

// Every parameter U(-0.8, 0.8): LayerNorm's ones and zeros (and any other symmetric start) could
// hide a swapped or missing term in a second derivative.
void randomize(nn::Module<double>& m, std::uint64_t seed) {
  Generator gen(seed);
  for (auto p : m.parameters()) p.mutable_value() = Tensor<double>::uniform(p.shape(), gen, -0.8, 0.8).value();
}

// Rewinds every random stream of m (its dropout modules) to its start: each call of a case's
// function draws the same dropout masks, so the function is deterministic as gradcheck requires.
void rewind_generators(nn::Module<double>& m) {
  for (auto& [name, g] : m.named_generators()) g->set_state(g->seed(), 0);
}

// A module's case: the inputs are the tensors `tensors()` makes (fresh leaves), then every
// parameter of the module, which fn puts in place of the module's own for the call
// (nn::ParameterSubstitution): gradcheck passes the module's own tensors and moves their values in
// place, the functional transforms pass variables of their own. The checks restore every value
// exactly.
template <class M>
OpCase module_case(std::string name, std::shared_ptr<M> module,
                   std::type_identity_t<std::function<Tensor<double>(M&, const V&)>> run,
                   std::function<V()> tensors = [] { return V{}; }) {
  std::vector<std::string> names;
  for (const auto& [parameter_name, p] : module->named_parameters()) names.push_back(parameter_name);
  return {std::move(name),
          [module, run, names](const V& x) {
            rewind_generators(*module);
            const V parameters(x.end() - static_cast<std::ptrdiff_t>(names.size()), x.end());
            const nn::ParameterSubstitution<double> substituted(*module, names, parameters);
            return run(*module, x);
          },
          [module, tensors] { return with_parameters(tensors(), *module); }};
}

// The module build(gen) makes from a Generator seeded `seed`, its parameters then randomised, in
// eval mode unless `train` (dropout active, its streams rewound on every call).
template <class Build>
auto make(std::uint64_t seed, bool train, Build build) {
  Generator gen(seed);
  auto m = build(gen);
  randomize(*m, seed + 1);
  m->train(train);
  return m;
}

// One fresh leaf of `shape` on every call.
std::function<V()> input(const Shape& shape, std::uint64_t seed) {
  return [=] { return V{leaf(shape, seed)}; };
}

// sublayer_connection (a function, used by every encoder and decoder layer) around a Linear, held
// by a module so its norm, dropout stream and linear are listed as one module's.
class SublayerConnection : public nn::Module<double> {
 public:
  SublayerConnection(bool norm_first, Generator& gen)
      : norm_first_(norm_first),
        norm_(register_module("norm", std::make_shared<nn::LayerNorm<double>>(kDModel))),
        dropout_(register_module("dropout", std::make_shared<nn::Dropout<double>>(gen, 0.2))),
        sublayer_(register_module("sublayer", std::make_shared<nn::Linear<double>>(kDModel, kDModel, gen))) {}
  std::string type_name() const override { return "SublayerConnection"; }
  Tensor<double> operator()(const Tensor<double>& x) {
    return tf::sublayer_connection(x, *norm_, *dropout_, norm_first_, *sublayer_);
  }

 private:
  bool norm_first_;
  std::shared_ptr<nn::LayerNorm<double>> norm_;
  std::shared_ptr<nn::Dropout<double>> dropout_;
  std::shared_ptr<nn::Linear<double>> sublayer_;
};

// Masks, true = may attend. The self-attention masks and mha_cross_mask each fully mask some
// query's keys (every module allows it).
// Batch-first self-attention [batch, 1, seq_q, seq_k] over heads: batch 1's query 0 sees nothing.
AttendMask mha_self_mask() { return mask_from({2, 1, 3, 3}, {1, 0, 1, 1, 1, 0, 0, 1, 1, /**/ 0, 0, 0, 1, 1, 0, 1, 0, 1}); }
// Batch-first cross-attention padding mask [batch, 1, 1, seq_k]: every key of batch 1 is masked.
AttendMask mha_cross_mask() { return mask_from({2, 1, 1, 3}, {1, 0, 1, /**/ 0, 0, 0}); }
// labml [seq_q, seq_k, batch]: query 1 of batch 0 sees nothing.
AttendMask labml_self_mask() {
  return mask_from({3, 3, 2}, {1, 1, 0, 1, 1, 0, /**/ 0, 1, 0, 0, 0, 1, /**/ 1, 0, 1, 1, 0, 1});
}
// labml cross [1, seq_k, batch]: key 1 of batch 0 and key 0 of batch 1 masked for every query.
AttendMask labml_cross_mask() { return mask_from({1, 3, 2}, {1, 0, 0, 1, 1, 1}); }
// the annotated encoder-decoder's [batch, seq_q, seq_k]: batch 0 causal, batch 1 with query 2 fully masked (uniform
// weights there: the module fills with the lowest finite value, not -inf).
AttendMask transformer_self_mask() {
  return mask_from({2, 3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1, /**/ 1, 0, 1, 0, 1, 1, 0, 0, 0});
}
// [batch, 1, seq_k]: a source padding mask.
AttendMask transformer_cross_mask() { return mask_from({2, 1, 3}, {1, 1, 0, 1, 0, 1}); }

// Source tokens padded at [1, 3], and tokens without padding. An embedding's padding row gets no
// gradient by definition, so wherever a case reads it, it must not move the checked output either
// (a zero row squared, or a position every mask hides and the loss ignores).
const IndexArray kSrc{{1, 4, 2, 3}, {1, 3, 2, kPad}};
const IndexArray kTokens{{1, 4, 2}, {3, 3, 1}};

// A unary module applied to the first input, and the same times that input (for the modules that
// are linear in it, whose second derivative would otherwise be zero).
const auto on_x = [](auto& m, const V& x) { return m(x[0]); };
const auto times_x = [](auto& m, const V& x) { return mul(m(x[0]), x[0]); };
Tensor<double> squared(const Tensor<double>& t) { return mul(t, t); }

// Builders for make(): the module M from args and the Generator (last, as most constructors
// take it, or first), or from args alone.
template <class M, class... Args>
auto built(Args... args) {
  return [=](Generator& gen) { return std::make_shared<M>(args..., gen); };
}
template <class M, class... Args>
auto generator_first(Args... args) {
  return [=](Generator& gen) { return std::make_shared<M>(gen, args...); };
}
template <class M, class... Args>
auto without_generator(Args... args) {
  return [=](Generator&) { return std::make_shared<M>(args...); };
}

std::vector<OpCase> layer_cases() {
  using nn::Linear;
  const auto linear_gelu_dropout_linear = [](Generator& gen) {
    return std::make_shared<nn::Sequential<double>>(std::vector<std::shared_ptr<nn::UnaryModule<double>>>{
        std::make_shared<Linear<double>>(3, 4, gen), std::make_shared<nn::GELU<double>>(),
        std::make_shared<nn::Dropout<double>>(gen, 0.3), std::make_shared<Linear<double>>(4, 2, gen)});
  };
  return {
      module_case("Linear_bias", make(500, false, built<Linear<double>>(3, 2)), on_x, input({2, 2, 3}, 501)),
      module_case("Linear_no_bias",
                  make(502, false, [](Generator& gen) { return std::make_shared<Linear<double>>(3, 2, gen, false); }),
                  on_x, input({2, 3}, 503)),
      module_case("LayerNorm", make(504, false, without_generator<nn::LayerNorm<double>>(kDModel)), on_x,
                  input({2, 3, 4}, 505)),
      // Without affine parameters LayerNorm is x's function alone.
      module_case("LayerNorm_no_affine",
                  make(506, false, without_generator<nn::LayerNorm<double>>(kDModel, 1e-5, false)), on_x,
                  input({3, 4}, 507)),
      // Embeddings are linear in the weight: squared. With a padding index the module's zero
      // padding row is kept (not randomised), so its zero gradient (by definition) is also the
      // derivative of the square there.
      module_case("Embedding", make(508, false, built<nn::Embedding<double>>(kVocab, 3)),
                  [](auto& m, const V&) { return squared(m(IndexArray{{0, 2, 2}, {4, 1, 0}})); }),
      module_case("Embedding_padding_idx",
                  [] {
                    Generator gen(509);
                    return std::make_shared<nn::Embedding<double>>(kVocab, 3, gen, Index{2});
                  }(),
                  [](auto& m, const V&) { return squared(m(IndexArray{{0, 2, 2}, {4, 1, 0}})); }),
      module_case("transformer_Embedding",
                  [] {
                    Generator gen(510);
                    return std::make_shared<tf::Embedding<double>>(kVocab, 3, kPad, gen);
                  }(),
                  [](auto& m, const V&) { return squared(m(kSrc)); }),
      module_case("Dropout_train", make(511, true, generator_first<nn::Dropout<double>>()), times_x,
                  input({3, 4}, 512)),
      module_case("Dropout_eval", make(513, false, generator_first<nn::Dropout<double>>()), times_x,
                  input({3, 4}, 514)),
      module_case("PositionalEncoding",
                  make(515, false, without_generator<nn::PositionalEncoding<double>>(kDModel, 10)), times_x,
                  input({2, 3, 4}, 516)),
      module_case("ReLU", make(517, false, without_generator<nn::ReLU<double>>()), times_x, input({3, 4}, 518)),
      module_case("GELU", make(519, false, without_generator<nn::GELU<double>>()), on_x, input({3, 4}, 520)),
      module_case("GELU_tanh", make(521, false, without_generator<nn::GELU<double>>(GeluApproximation::Tanh)), on_x,
                  input({3, 4}, 522)),
      module_case("Softmax_dim0", make(523, false, without_generator<nn::Softmax<double>>(Index{0})), on_x,
                  input({3, 4}, 524)),
      module_case("Sequential_linear_gelu_dropout_linear_train", make(525, true, linear_gelu_dropout_linear), on_x,
                  input({2, 3}, 526)),
      module_case("FFN", make(527, false, built<tf::FFN<double>>(kDModel, kDFF)), on_x, input({2, 3, 4}, 528)),
      module_case("SublayerConnection_post_LN_train", make(529, true, built<SublayerConnection>(false)), on_x,
                  input({2, 3, 4}, 530)),
      module_case("SublayerConnection_pre_LN_train", make(531, true, built<SublayerConnection>(true)), on_x,
                  input({2, 3, 4}, 532)),
      module_case("OutputGenerator", make(533, false, built<tf::OutputGenerator<double>>(kDModel, kVocab)), on_x,
                  input({2, 3, 4}, 534)),
      // The loss is linear in its log-probabilities: through log_softmax it has a second derivative.
      module_case("LabelSmoothing", make(535, false, without_generator<nn::LabelSmoothing<double>>(kVocab, kPad, 0.3)),
                  [](auto& m, const V& x) { return m(log_softmax(x[0], -1), IndexArray{1, kPad, 4}); },
                  input({3, kVocab}, 536)),
  };
}

// The three multi-head attention families and both scaled dot-product attention modules: self-
// and cross-attention, with and without masks; the masked ones run in training mode where the
// module has dropout (rewound on every call).
std::vector<OpCase> attention_cases() {
  using BatchFirst = nn::mha::MultiHeadAttention<double>;
  using Labml = nn::labml::MultiHeadAttention<double>;
  using AnnotatedMha = tf::MultiHeadAttention<double>;
  // Batch-first [batch 2, seq 3, d_model]; sequence-first for labml, [seq 3, batch 2, d_model].
  const auto self_input = [](std::uint64_t seed) { return input({2, 3, 4}, seed); };
  const auto labml_self_input = [](std::uint64_t seed) { return input({3, 2, 4}, seed); };
  // query, key and value of cross-attention: seq_q 2, seq_k 3, batch 2 (labml is sequence-first,
  // [seq, batch, d_model]; the others batch-first).
  const auto cross_inputs = [](std::uint64_t seed, bool seq_first) {
    return [=] {
      const Shape kv = seq_first ? Shape{3, 2, 4} : Shape{2, 3, 4};
      return V{leaf({2, 2, 4}, seed), leaf(kv, seed + 1), leaf(kv, seed + 2)};
    };
  };
  const auto labml = [](bool bias) {
    return [bias](Generator& gen) { return std::make_shared<Labml>(kHeads, kDModel, gen, 0.1, bias); };
  };
  const auto self = [](auto& m, const V& x) { return m(x[0], x[0], x[0]); };
  const auto cross = [](auto& m, const V& x) { return m(x[0], x[1], x[2]); };
  return {
      module_case("mha_batch_first_self", make(540, false, built<BatchFirst>(kDModel, kHeads)),
                  [](auto& m, const V& x) { return m(x[0], x[0], x[0]).output; }, self_input(541)),
      module_case("mha_batch_first_self_masked_train", make(542, true, built<BatchFirst>(kDModel, kHeads)),
                  [](auto& m, const V& x) { return m(x[0], x[0], x[0], mha_self_mask()).output; }, self_input(543)),
      module_case("mha_batch_first_cross", make(544, false, built<BatchFirst>(kDModel, kHeads)),
                  [](auto& m, const V& x) { return m(x[0], x[1], x[2]).output; }, cross_inputs(545, false)),
      module_case("mha_batch_first_cross_masked", make(548, false, built<BatchFirst>(kDModel, kHeads)),
                  [](auto& m, const V& x) { return m(x[0], x[1], x[2], mha_cross_mask()).output; },
                  cross_inputs(549, false)),
      // Any leading axes: q, k, v [batch, 1, seq, d_k], the mask over [batch, heads, seq_q, seq_k].
      module_case("mha_ScaledDotProductAttention_masked_train",
                  make(552, true, generator_first<nn::mha::ScaledDotProductAttention<double>>(0.2)),
                  [](auto& m, const V& x) { return m(x[0], x[1], x[2], mha_self_mask()).output; },
                  [] { return V{leaf({2, 1, 3, 2}, 554), leaf({2, 1, 3, 2}, 555), leaf({2, 1, 3, 2}, 556)}; }),

      module_case("mha_labml_self", make(560, false, labml(true)), self, labml_self_input(562)),
      module_case("mha_labml_self_masked_train", make(563, true, labml(true)),
                  [](auto& m, const V& x) { return m(x[0], x[0], x[0], labml_self_mask()); }, labml_self_input(565)),
      module_case("mha_labml_self_no_bias", make(566, false, labml(false)), self, labml_self_input(568)),
      module_case("mha_labml_cross", make(569, false, labml(true)), cross, cross_inputs(571, true)),
      module_case("mha_labml_cross_masked", make(574, false, labml(true)),
                  [](auto& m, const V& x) { return m(x[0], x[1], x[2], labml_cross_mask()); }, cross_inputs(576, true)),
      module_case("labml_PrepareForMultiHeadAttention",
                  make(578, false,
                       [](Generator& gen) {
                         using Prepare = nn::labml::PrepareForMultiHeadAttention<double>;
                         return std::make_shared<Prepare>(kDModel, kHeads, 2, gen, /*bias=*/true);
                       }),
                  on_x, labml_self_input(579)),

      module_case("mha_transformer_self", make(580, false, built<AnnotatedMha>(kDModel, kHeads)), self, self_input(581)),
      module_case("mha_transformer_self_masked", make(582, false, built<AnnotatedMha>(kDModel, kHeads)),
                  [](auto& m, const V& x) { return m(x[0], x[0], x[0], transformer_self_mask()); }, self_input(583)),
      module_case("mha_transformer_cross", make(584, false, built<AnnotatedMha>(kDModel, kHeads)), cross,
                  cross_inputs(585, false)),
      module_case("mha_transformer_cross_masked", make(588, false, built<AnnotatedMha>(kDModel, kHeads)),
                  [](auto& m, const V& x) { return m(x[0], x[1], x[2], transformer_cross_mask()); },
                  cross_inputs(589, false)),
      module_case("transformer_ScaledDotProductAttention_masked",
                  make(592, false, without_generator<tf::ScaledDotProductAttention<double>>(std::size_t{2})),
                  [](auto& m, const V& x) { return m(x[0], x[1], x[2], transformer_self_mask()); },
                  [] { return V{leaf({2, 3, 2}, 593), leaf({2, 3, 2}, 594), leaf({2, 3, 2}, 595)}; }),
  };
}

// The annotated encoder-decoder's layers and stacks (one layer each), post-LN in training (dropout 0.1, rewound) and
// pre-LN in eval. The stacks read kTokens, without padding: the padding row of their randomised
// embeddings is not read.
template <class Layer>
std::shared_ptr<Layer> transformer_layer(std::uint64_t seed, bool norm_first) {
  return make(seed, !norm_first, [norm_first](Generator& gen) {
    return std::make_shared<Layer>(kDModel, kDFF, kHeads, 0.1, 1e-5, gen, norm_first);
  });
}
template <class Stack>
std::shared_ptr<Stack> transformer_stack(std::uint64_t seed, bool norm_first) {
  return make(seed, !norm_first, [norm_first](Generator& gen) {
    return std::make_shared<Stack>(kVocab, 10, kPad, kDModel, 1, kDFF, kHeads, 0.1, 1e-5, gen, norm_first);
  });
}

std::vector<OpCase> transformer_cases() {
  using EncoderLayer = tf::TransformerEncoderLayer<double>;
  using DecoderLayer = tf::TransformerDecoderLayer<double>;
  using Encoder = tf::TransformerEncoder<double>;
  using Decoder = tf::TransformerDecoder<double>;
  const auto encode = [](auto& m, const V& x) { return m(x[0], transformer_cross_mask()); };
  const auto decode = [](auto& m, const V& x) {
    return m(x[0], x[1], transformer_cross_mask(), tf::make_tgt_mask(kTokens, kPad));
  };
  // x, or tgt and src: [batch 2, seq 3, d_model].
  const auto layer_inputs = [](std::uint64_t seed, std::size_t n) {
    return [=] {
      V x;
      for (std::size_t i = 0; i < n; ++i) x.push_back(leaf({2, 3, 4}, seed + i));
      return x;
    };
  };
  const auto encode_tokens = [](auto& m, const V&) { return m(kTokens, transformer_cross_mask()); };
  // Memory [2, 4, 4] of kSrc, with kSrc's padding mask.
  const auto decode_tokens = [](auto& m, const V& x) {
    return m(kTokens, x[0], tf::make_src_mask(kSrc, kPad), tf::make_tgt_mask(kTokens, kPad));
  };
  const auto memory = [] { return V{leaf({2, 4, 4}, 620)}; };
  return {
      module_case("TransformerEncoderLayer_post_LN_train", transformer_layer<EncoderLayer>(600, false), encode,
                  layer_inputs(601, 1)),
      module_case("TransformerEncoderLayer_pre_LN", transformer_layer<EncoderLayer>(602, true), encode,
                  layer_inputs(603, 1)),
      module_case("TransformerDecoderLayer_post_LN_train", transformer_layer<DecoderLayer>(604, false), decode,
                  layer_inputs(605, 2)),
      module_case("TransformerDecoderLayer_pre_LN", transformer_layer<DecoderLayer>(607, true), decode,
                  layer_inputs(608, 2)),
      module_case("TransformerEncoder_post_LN_train", transformer_stack<Encoder>(610, false), encode_tokens),
      module_case("TransformerEncoder_pre_LN", transformer_stack<Encoder>(612, true), encode_tokens),
      module_case("TransformerDecoder_post_LN_train", transformer_stack<Decoder>(614, false), decode_tokens, memory),
      module_case("TransformerDecoder_pre_LN", transformer_stack<Decoder>(616, true), decode_tokens, memory),
  };
}

// The copy task's training loss (nn/copy_task/copy_task.cpp's batch_loss, written out: this
// suite builds without the examples) of one fixed batch, on a Transformer<double> of the copy
// task's shape at a small size (one layer, dropout 0 as the copy task's default): src kSrc,
// decoder input its first three tokens, targets the last three, mean cross-entropy over the
// non-pad targets. kSrc's padding is hidden from every query by
// the source mask and is an ignored target, so the randomised padding rows move nothing.
OpCase copy_task_loss_case(std::string name, std::uint64_t seed, bool norm_first) {
  return module_case(
      std::move(name), make(seed, true, [norm_first](Generator& gen) {
        return std::make_shared<tf::Transformer<double>>(kVocab, kVocab, 10, kPad, kDModel, 1, kDFF, kHeads, 0.0, 1e-5,
                                                         gen, norm_first);
      }),
      [](auto& m, const V&) {
        const IndexArray tgt_in{{1, 4, 2}, {1, 3, 2}}, tgt_out{4, 2, 3, 3, 2, kPad};
        const Tensor<double> log_probs =
            m.generator(m(kSrc, tgt_in, tf::make_src_mask(kSrc, kPad), tf::make_tgt_mask(tgt_in, kPad)));
        return cross_entropy(reshape(log_probs, {-1, static_cast<Index>(kVocab)}), tgt_out, {.ignore_index = kPad});
      });
}

}  // namespace

std::vector<OpCase> module_cases() {
  std::vector<OpCase> all;
  for (auto family : {layer_cases, attention_cases, transformer_cases}) {
    for (auto& c : family()) all.push_back(std::move(c));
  }
  all.push_back(copy_task_loss_case("Transformer_copy_task_loss_post_LN", 630, false));
  all.push_back(copy_task_loss_case("Transformer_copy_task_loss_pre_LN", 632, true));
  return all;
}

}  // namespace tapegrad::testing
