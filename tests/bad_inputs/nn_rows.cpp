// Rows of docs/bad-inputs.md, section "nn": module constructors and forwards, Module's state dict,
// masks, and the labml / mha / transformer attention modules.
#include "nn/activation.h"
#include "nn/containers.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/functional_call.h"
#include "nn/init.h"
#include "nn/label_smoothing.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/masks.h"
#include "nn/mha/multi_head_attention.h"
#include "nn/positional_encoding.h"
#include "nn/transformer/masks.h"
#include "nn/transformer/transformer.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

using namespace tapegrad::nn;
namespace tf = tapegrad::nn::transformer;

AttendMask attend_mask(const Shape& shape) { return AttendMask(mask_of(shape)); }

// A user-defined module that registers what it is given.
struct Custom : Module<double> {
  std::string type_name() const override { return "Custom"; }
  void add_parameter(const std::string& name) { register_parameter(name, zeros({2})); }
  void add_child(const std::string& name, std::shared_ptr<Module<double>> child) { register_module(name, child); }
};

// load_state_dict of Linear(3, 2)'s state with `edit` applied.
template <class Edit>
void load_linear_state(Edit edit, bool strict = true) {
  Linear<double> linear(3, 2, gen());
  auto state = linear.state_dict();
  edit(state);
  linear.load_state_dict(state, strict);
}

// Small stacks: d_model 4, d_ff 8, 2 heads, vocab 5, max_len 6, pad 0.
tf::TransformerEncoder<double> small_encoder() { return {5, 6, 0, 4, 1, 8, 2, 0.0, 1e-5, gen()}; }
tf::Transformer<double> small_transformer() { return {5, 5, 6, 0, 4, 1, 8, 2, 0.0, 1e-5, gen()}; }

// ---- layers ---------------------------------------------------------------------------------
BAD_INPUT_ROW(Nn, functional_call_unknown_name, ValueError, ([] {
                Linear<double> linear(3, 2, gen());
                functional_call(linear, {"wieght"}, std::vector{zeros({2, 3})}, zeros({1, 3}));
              }()),
              "functional_call: Linear has no parameter 'wieght'; its parameters are 'weight', 'bias'")
BAD_INPUT_ROW(Nn, functional_call_wrong_shape, ShapeError, ([] {
                Linear<double> linear(3, 2, gen());
                functional_call(linear, {"weight"}, std::vector{zeros({3, 2})}, zeros({1, 3}));
              }()),
              "functional_call: the tensor for parameter 'weight' has shape [3,2] but the parameter is [2,3]")
BAD_INPUT_ROW(Nn, linear_zero_in_features, ValueError, (Linear<double>(0, 3, gen())), "Linear", "in_features", "got 0")
BAD_INPUT_ROW(Nn, linear_input_last_dim, ShapeError, (Linear<double>(3, 2, gen())(zeros({4, 5}))), "Linear(3, 2)",
              "[4,5]")
BAD_INPUT_ROW(Nn, linear_input_0d, ShapeError, (Linear<double>(3, 2, gen())(zeros({}))), "Linear(3, 2)", "[]")
BAD_INPUT_ROW(Nn, linear_input_undefined, ValueError, (Linear<double>(3, 2, gen())(undefined())), "Linear(3, 2)",
              "undefined")
BAD_INPUT_ROW(Nn, embedding_module_padding_idx_out_of_range, ValueError, (Embedding<double>(4, 2, gen(), 4)),
              "Embedding", "padding_idx 4", "4")
BAD_INPUT_ROW(Nn, embedding_module_index_out_of_range, ValueError, (Embedding<double>(4, 2, gen())(indices({2}, 7))),
              "embedding", "index 7", "4")
BAD_INPUT_ROW(Nn, layer_norm_module_zero_eps, ValueError, (LayerNorm<double>(3, 0.0)), "LayerNorm", "eps", "0")
BAD_INPUT_ROW(Nn, layer_norm_module_empty_shape, ShapeError, (LayerNorm<double>(Shape{})), "LayerNorm",
              "normalized_shape []")
BAD_INPUT_ROW(Nn, layer_norm_module_wrong_width, ShapeError, (LayerNorm<double>(3)(zeros({2, 4}))), "layer_norm",
              "normalized_shape [3]", "[2,4]")
BAD_INPUT_ROW(Nn, dropout_module_p_above_one, ValueError, (Dropout<double>(gen(), 1.5)), "Dropout", "[0, 1]", "1.5")
BAD_INPUT_ROW(Nn, dropout_module_p_nan, ValueError, (Dropout<double>(gen(), nan)), "Dropout", "p", "nan")
BAD_INPUT_ROW(Nn, positional_encoding_zero_d_model, ValueError, (PositionalEncoding<double>(0)), "PositionalEncoding",
              "d_model", "got 0 and 5000")
BAD_INPUT_ROW(Nn, positional_encoding_sequence_too_long, ShapeError,
              (PositionalEncoding<double>(4, 3)(zeros({1, 5, 4}))), "PositionalEncoding", "max_len=3", "[1,5,4]")
BAD_INPUT_ROW(Nn, positional_encoding_wrong_d_model, ShapeError, (PositionalEncoding<double>(4, 8)(zeros({1, 5, 3}))),
              "PositionalEncoding", "d_model=4", "[1,5,3]")
BAD_INPUT_ROW(Nn, positional_encoding_1d_input, ShapeError, (PositionalEncoding<double>(4, 8)(zeros({4}))),
              "PositionalEncoding", "[4]")
BAD_INPUT_ROW(Nn, softmax_module_dim_out_of_range, ValueError, (Softmax<double>(3)(zeros({2, 3}))), "softmax", "axis 3",
              "[2,3]")
BAD_INPUT_ROW(Nn, sequential_null_module, ValueError, (Sequential<double>({nullptr})), "Sequential", "'0'", "null")
BAD_INPUT_ROW(Nn, module_list_index_out_of_range, ValueError, ([] {
                ModuleList<double> list;
                list[2];
              }()),
              "ModuleList", "index 2", "0 modules")

// ---- init ---------------------------------------------------------------------------------
// Applies an initialiser to a fresh [2,3] tensor (the init functions take an lvalue).
template <class Init>
void on_2x3(Init init) {
  auto t = zeros({2, 3});
  init(t);
}
BAD_INPUT_ROW(Nn, init_fans_of_0d, ValueError, (init::fans(zeros({}))), "init", "fans", "0-d", "[]")
BAD_INPUT_ROW(Nn, init_uniform_low_above_high, ValueError,
              (on_2x3([](auto& t) { init::uniform_(t, 1.0, -1.0, gen()); })), "init::uniform_", "[1, -1)", "[2,3]")
BAD_INPUT_ROW(Nn, init_uniform_infinite_bound, ValueError,
              (on_2x3([](auto& t) { init::uniform_(t, 0.0, inf, gen()); })), "init::uniform_", "[0, inf)")
BAD_INPUT_ROW(Nn, init_normal_negative_std, ValueError, (on_2x3([](auto& t) { init::normal_(t, 0.0, -1.0, gen()); })),
              "init::normal_", "std -1", "[2,3]")
BAD_INPUT_ROW(Nn, init_normal_nan_mean, ValueError, (on_2x3([](auto& t) { init::normal_(t, nan, 1.0, gen()); })),
              "init::normal_", "mean nan")
BAD_INPUT_ROW(Nn, init_kaiming_nan_a, ValueError, (on_2x3([](auto& t) { init::kaiming_uniform_(t, gen(), nan); })),
              "init::kaiming_uniform_", "a", "nan", "[2,3]")
BAD_INPUT_ROW(Nn, init_xavier_negative_gain, ValueError,
              (on_2x3([](auto& t) { init::xavier_uniform_(t, gen(), -1.0); })), "init::xavier_uniform_", "gain", "-1",
              "[2,3]")
BAD_INPUT_ROW(Nn, init_constant_undefined, ValueError, ([] {
                auto t = undefined();
                init::constant_(t, 1.0);
              }()),
              "mutable_value", "undefined tensor")

// ---- Module -------------------------------------------------------------------------------
BAD_INPUT_ROW(Nn, module_parameter_name_with_dot, ValueError, (Custom().add_parameter("a.b")), "Custom", "'a.b'")
BAD_INPUT_ROW(Nn, module_parameter_name_empty, ValueError, (Custom().add_parameter("")), "Custom", "''", "non-empty")
BAD_INPUT_ROW(Nn, module_name_registered_twice, ValueError, ([] {
                Custom c;
                c.add_parameter("w");
                c.add_parameter("w");
              }()),
              "Custom", "'w'", "twice")
BAD_INPUT_ROW(Nn, module_null_child, ValueError, (Custom().add_child("c", nullptr)), "Custom", "'c'", "null")
BAD_INPUT_ROW(Nn, load_state_dict_missing_key, ValueError, (load_linear_state([](auto& s) { s.erase("bias"); })),
              "load_state_dict", "Linear", "missing keys [bias]")
BAD_INPUT_ROW(Nn, load_state_dict_unexpected_key, ValueError,
              (load_linear_state([](auto& s) { s["extra"] = xt::zeros<double>({1}); })), "load_state_dict",
              "unexpected keys [extra]")
BAD_INPUT_ROW(Nn, load_state_dict_wrong_shape, ShapeError, (load_linear_state([](auto& s) {
                s["weight"] = xt::zeros<double>({3, 2});
              })),
              "load_state_dict", "'weight'", "[3,2]", "[2,3]")
BAD_INPUT_ROW(Nn, load_state_dict_non_strict_wrong_shape, ShapeError,
              (load_linear_state([](auto& s) { s["bias"] = xt::xarray<double>(0.0); }, false)), "load_state_dict",
              "'bias'", "[]", "[2]")

// ---- masks --------------------------------------------------------------------------------
BAD_INPUT_ROW(Nn, create_padding_mask_1d_tokens, ShapeError, (create_padding_mask(indices({4}, 1))),
              "create_padding_mask", "[batch, seq]", "[4]")
BAD_INPUT_ROW(Nn, make_src_mask_3d_tokens, ShapeError, (tf::make_src_mask(indices({1, 2, 3}, 1), 0)), "make_src_mask",
              "[batch, seq]", "[1,2,3]")
BAD_INPUT_ROW(Nn, make_tgt_mask_1d_tokens, ShapeError, (tf::make_tgt_mask(indices({3}, 1), 0)), "make_tgt_mask",
              "[batch, seq]", "[3]")

// ---- labml (sequence-first) -----------------------------------------------------------------
labml::MultiHeadAttention<double> labml_mha() { return {2, 4, gen(), 0.0}; }
BAD_INPUT_ROW(Nn, labml_prepare_zero_heads, ValueError,
              (labml::PrepareForMultiHeadAttention<double>(4, 0, 2, gen(), true)), "PrepareForMultiHeadAttention",
              "heads=0")
BAD_INPUT_ROW(Nn, labml_prepare_wrong_width, ShapeError,
              (labml::PrepareForMultiHeadAttention<double>(4, 2, 2, gen(), true)(zeros({3, 5}))),
              "PrepareForMultiHeadAttention(d_model=4", "[3,5]")
BAD_INPUT_ROW(Nn, labml_mha_d_model_not_multiple_of_heads, ValueError, (labml::MultiHeadAttention<double>(3, 4, gen())),
              "MultiHeadAttention", "d_model (4)", "heads (3)")
BAD_INPUT_ROW(Nn, labml_mha_zero_heads, ValueError, (labml::MultiHeadAttention<double>(0, 4, gen())),
              "MultiHeadAttention", "heads (0)")
BAD_INPUT_ROW(Nn, labml_mha_query_2d, ShapeError, (labml_mha()(zeros({3, 4}), zeros({3, 1, 4}), zeros({3, 1, 4}))),
              "MultiHeadAttention(heads=2, d_model=4)", "query", "[3,4]")
BAD_INPUT_ROW(Nn, labml_mha_key_value_lengths, ShapeError,
              (labml_mha()(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({2, 1, 4}))),
              "MultiHeadAttention(heads=2, d_model=4)", "key", "[3,1,4]", "value", "[2,1,4]")
BAD_INPUT_ROW(Nn, labml_mha_batch_sizes, ShapeError,
              (labml_mha()(zeros({3, 1, 4}), zeros({3, 2, 4}), zeros({3, 2, 4}))),
              "MultiHeadAttention(heads=2, d_model=4)", "[3,1,4]", "[3,2,4]")
BAD_INPUT_ROW(Nn, labml_mha_value_wrong_width, ShapeError,
              (labml_mha()(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({3, 1, 5}))),
              "MultiHeadAttention(heads=2, d_model=4)", "value [3,1,5]", "[seq_len, batch_size, 4]")
BAD_INPUT_ROW(Nn, labml_mha_mask_rank, ShapeError,
              (labml_mha()(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({3, 1, 4}), attend_mask({3, 3}))), "prepare_mask",
              "mask [3,3]", "3 axes")
BAD_INPUT_ROW(Nn, labml_mha_mask_seq_k, ShapeError,
              (labml_mha()(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({3, 1, 4}), attend_mask({3, 2, 1}))),
              "prepare_mask", "mask [3,2,1]", "key [3,1,4]")

// ---- mha (batch-first, seeds 002/003) -------------------------------------------------------
mha::MultiHeadAttention<double> batch_first_mha() { return {4, 2, gen(), 0.0}; }
mha::ScaledDotProductAttention<double> batch_first_sdpa() { return mha::ScaledDotProductAttention<double>(gen()); }
BAD_INPUT_ROW(Nn, mha_sdpa_dropout_p_above_one, ValueError, (mha::ScaledDotProductAttention<double>(gen(), 1.5)),
              "Dropout", "[0, 1]", "1.5")
BAD_INPUT_ROW(Nn, mha_sdpa_1d_query, ShapeError, (batch_first_sdpa()(zeros({4}), zeros({3, 4}), zeros({3, 4}))),
              "ScaledDotProductAttention", "[..., seq, d]", "[4]")
BAD_INPUT_ROW(Nn, mha_sdpa_d_k_mismatch, ShapeError, (batch_first_sdpa()(zeros({2, 4}), zeros({3, 5}), zeros({3, 4}))),
              "ScaledDotProductAttention", "d_k", "[2,4]", "[3,5]")
BAD_INPUT_ROW(Nn, mha_sdpa_seq_k_mismatch, ShapeError,
              (batch_first_sdpa()(zeros({2, 4}), zeros({3, 4}), zeros({2, 4}))), "ScaledDotProductAttention", "seq_k",
              "[3,4]", "[2,4]")
BAD_INPUT_ROW(Nn, mha_sdpa_mask_does_not_broadcast, ShapeError,
              (batch_first_sdpa()(zeros({2, 4}), zeros({3, 4}), zeros({3, 4}), attend_mask({2, 2}))),
              "ScaledDotProductAttention", "mask [2,2]", "[2,3]")
BAD_INPUT_ROW(Nn, mha_d_model_not_multiple_of_heads, ValueError, (mha::MultiHeadAttention<double>(5, 2, gen())),
              "MultiHeadAttention", "d_model (5)", "2")
BAD_INPUT_ROW(Nn, mha_query_wrong_width, ShapeError,
              (batch_first_mha()(zeros({1, 3, 5}), zeros({1, 3, 4}), zeros({1, 3, 4}))),
              "MultiHeadAttention(d_model=4, n_heads=2)", "query", "[1,3,5]")
BAD_INPUT_ROW(Nn, mha_key_value_lengths, ShapeError,
              (batch_first_mha()(zeros({1, 3, 4}), zeros({1, 3, 4}), zeros({1, 2, 4}))),
              "MultiHeadAttention(d_model=4, n_heads=2)", "[1,3,4]", "[1,2,4]")
BAD_INPUT_ROW(Nn, mha_batch_sizes, ShapeError,
              (batch_first_mha()(zeros({1, 3, 4}), zeros({2, 3, 4}), zeros({2, 3, 4}))),
              "MultiHeadAttention(d_model=4, n_heads=2)", "key [2,3,4]", "batch size of query [1,3,4]")
BAD_INPUT_ROW(Nn, mha_mask_does_not_broadcast, ShapeError,
              (batch_first_mha()(zeros({1, 3, 4}), zeros({1, 3, 4}), zeros({1, 3, 4}), attend_mask({2, 2}))),
              "MultiHeadAttention(d_model=4, n_heads=2)", "mask [2,2]", "[1,2,3,3]")

// ---- transformer (the annotated encoder-decoder) ----------------------------------------------------------------
BAD_INPUT_ROW(Nn, transformer_sdpa_zero_d_k, ValueError, (tf::ScaledDotProductAttention<double>(0)),
              "ScaledDotProductAttention", "d_k")
BAD_INPUT_ROW(Nn, transformer_sdpa_2d_query, ShapeError,
              (tf::ScaledDotProductAttention<double>(4)(zeros({2, 4}), zeros({1, 2, 4}), zeros({1, 2, 4}))),
              "ScaledDotProductAttention", "3-D", "[2,4]")
BAD_INPUT_ROW(Nn, transformer_sdpa_wrong_d_k, ShapeError,
              (tf::ScaledDotProductAttention<double>(4)(zeros({1, 2, 3}), zeros({1, 2, 3}), zeros({1, 2, 3}))),
              "ScaledDotProductAttention", "d_k = 4", "[1,2,3]")
BAD_INPUT_ROW(Nn, transformer_sdpa_mask_rank, ShapeError,
              (tf::ScaledDotProductAttention<double>(4)(zeros({1, 2, 4}), zeros({1, 2, 4}), zeros({1, 2, 4}),
                                                        attend_mask({2, 2}))),
              "ScaledDotProductAttention", "2 dims [2,2]", "3")
BAD_INPUT_ROW(Nn, transformer_mha_zero_heads, ValueError, (tf::MultiHeadAttention<double>(4, 0, gen())),
              "MultiHeadAttention", "d_model (4)", "h (0)")
BAD_INPUT_ROW(Nn, transformer_mha_d_model_not_multiple, ValueError, (tf::MultiHeadAttention<double>(6, 4, gen())),
              "MultiHeadAttention", "d_model (6)", "h (4)")
BAD_INPUT_ROW(Nn, transformer_mha_wrong_width, ShapeError,
              (tf::MultiHeadAttention<double>(4, 2, gen())(zeros({1, 2, 3}), zeros({1, 2, 4}), zeros({1, 2, 4}))),
              "MultiHeadAttention", "[batch, seq, 4]", "[1,2,3]")
BAD_INPUT_ROW(Nn, transformer_mha_batch_mismatch, ShapeError,
              (tf::MultiHeadAttention<double>(4, 2, gen())(zeros({1, 2, 4}), zeros({2, 2, 4}), zeros({2, 2, 4}))),
              "MultiHeadAttention", "batch size", "[1,2,4]", "[2,2,4]")
BAD_INPUT_ROW(Nn, transformer_mha_mask_3d_wrong, ShapeError,
              (tf::MultiHeadAttention<double>(4, 2, gen())(zeros({1, 2, 4}), zeros({1, 2, 4}), zeros({1, 2, 4}),
                                                           attend_mask({1, 3, 2}))),
              "MultiHeadAttention", "mask_3d [1,3,2]")
BAD_INPUT_ROW(Nn, transformer_mha_weights_before_forward, ValueError,
              (tf::MultiHeadAttention<double>(4, 2, gen()).attention_weights()), "MultiHeadAttention",
              "before the first forward")
BAD_INPUT_ROW(Nn, transformer_ffn_zero_d_ff, ValueError, (tf::FFN<double>(4, 0, gen())), "Linear", "got 4 and 0")
BAD_INPUT_ROW(Nn, transformer_ffn_wrong_width, ShapeError, (tf::FFN<double>(4, 8, gen())(zeros({1, 2, 3}))),
              "Linear(4, 8)", "[1,2,3]")
BAD_INPUT_ROW(Nn, transformer_encoder_layer_heads, ValueError,
              (tf::TransformerEncoderLayer<double>(4, 8, 3, 0.1, 1e-5, gen())), "MultiHeadAttention", "d_model (4)",
              "h (3)")
BAD_INPUT_ROW(Nn, transformer_encoder_layer_dropout, ValueError,
              (tf::TransformerEncoderLayer<double>(4, 8, 2, 1.5, 1e-5, gen())), "Dropout", "1.5")
BAD_INPUT_ROW(Nn, transformer_encoder_layer_eps, ValueError,
              (tf::TransformerEncoderLayer<double>(4, 8, 2, 0.1, -1.0, gen())), "LayerNorm", "eps", "-1")
BAD_INPUT_ROW(Nn, transformer_encoder_tokens_1d, ShapeError, (small_encoder()(indices({3}, 1))), "Embedding",
              "[batch, seq]", "[3]")
BAD_INPUT_ROW(Nn, transformer_encoder_token_out_of_vocab, ValueError, (small_encoder()(indices({1, 3}, 5))),
              "embedding", "index 5", "5")
BAD_INPUT_ROW(Nn, transformer_encoder_sequence_too_long, ShapeError, (small_encoder()(indices({1, 7}, 1))),
              "PositionalEncoding", "max_len=6", "[1,7,4]")
BAD_INPUT_ROW(Nn, transformer_encoder_pad_idx_out_of_vocab, ValueError,
              (tf::TransformerEncoder<double>(5, 6, 5, 4, 1, 8, 2, 0.0, 1e-5, gen())), "Embedding", "padding_idx 5")
BAD_INPUT_ROW(Nn, transformer_decoder_memory_wrong_width, ShapeError,
              (small_transformer().decode(zeros({1, 3, 5}), std::nullopt, indices({1, 3}, 1))), "MultiHeadAttention",
              "[1,3,5]")
BAD_INPUT_ROW(Nn, transformer_src_tgt_batch_mismatch, ShapeError,
              (small_transformer()(indices({2, 3}, 1), indices({1, 3}, 1))), "MultiHeadAttention", "batch size",
              "[1,3,4]", "[2,3,4]")
BAD_INPUT_ROW(Nn, transformer_src_mask_wrong_shape, ShapeError,
              (small_transformer()(indices({1, 3}, 1), indices({1, 3}, 1), attend_mask({1, 1, 4}))),
              "MultiHeadAttention", "mask_3d [1,1,4]")
BAD_INPUT_ROW(Nn, transformer_generator_wrong_width, ShapeError, (small_transformer().generator(zeros({1, 3, 5}))),
              "Linear(4, 5)", "[1,3,5]")

BAD_INPUT_ROW(Nn, label_smoothing_size_below_three, ValueError, (LabelSmoothing<double>(2, 0, 0.1)), "LabelSmoothing",
              "size", "got 2")
BAD_INPUT_ROW(Nn, label_smoothing_padding_idx_out_of_range, ValueError, (LabelSmoothing<double>(5, 5, 0.1)),
              "LabelSmoothing", "padding_idx 5", "[0, 5)")
BAD_INPUT_ROW(Nn, label_smoothing_nan_smoothing, ValueError, (LabelSmoothing<double>(5, 0, nan)), "LabelSmoothing",
              "smoothing", "nan")
BAD_INPUT_ROW(Nn, label_smoothing_x_wrong_width, ShapeError, (LabelSmoothing<double>(5, 0, 0.1)(zeros({2, 4}), indices({2}, 1))),
              "LabelSmoothing", "[N, 5]", "[2,4]")
BAD_INPUT_ROW(Nn, label_smoothing_target_wrong_length, ShapeError,
              (LabelSmoothing<double>(5, 0, 0.1)(zeros({2, 5}), indices({3}, 1))), "LabelSmoothing", "[2,5]", "[3]")
BAD_INPUT_ROW(Nn, label_smoothing_target_out_of_range, ValueError,
              (LabelSmoothing<double>(5, 0, 0.1)(zeros({2, 5}), indices({2}, 5))), "LabelSmoothing", "target 5",
              "[0, 5)")

}  // namespace
}  // namespace tapegrad::bad_inputs
