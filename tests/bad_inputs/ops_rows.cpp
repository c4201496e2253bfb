// Rows of docs/bad-inputs.md, section "ops": every op of autograd/ops/*.h.
#include <algorithm>

#include "autograd/ops/all.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

IndexArray one_d(std::initializer_list<Index> values) {
  IndexArray a = IndexArray::from_shape({values.size()});
  std::copy(values.begin(), values.end(), a.begin());
  return a;
}

// ---- elementwise ----------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, add_shapes_do_not_broadcast, ShapeError, (zeros({2, 3}) + zeros({4})), "add", "[2,3]", "[4]")
BAD_INPUT_ROW(Ops, sub_shapes_do_not_broadcast, ShapeError, (zeros({2, 3}) - zeros({2, 1, 2})), "sub", "[2,3]",
              "[2,1,2]")
BAD_INPUT_ROW(Ops, mul_zero_size_axis_against_two, ShapeError, (zeros({0, 3}) * zeros({2, 3})), "mul", "[0,3]", "[2,3]")
BAD_INPUT_ROW(Ops, div_shapes_do_not_broadcast, ShapeError, (zeros({3}) / zeros({2})), "div", "[3]", "[2]")
BAD_INPUT_ROW(Ops, pow_shapes_do_not_broadcast, ShapeError, (pow(zeros({3}), zeros({2}))), "pow", "[3]", "[2]")
BAD_INPUT_ROW(Ops, maximum_shapes_do_not_broadcast, ShapeError, (maximum(zeros({2, 3}), zeros({4}))), "maximum",
              "[2,3]", "[4]")
BAD_INPUT_ROW(Ops, div_floor_shapes_do_not_broadcast, ShapeError, (div(zeros({3}), zeros({2}), RoundingMode::floor)),
              "div_floor", "[3]", "[2]")
BAD_INPUT_ROW(Ops, div_trunc_undefined_b, ValueError, (div_trunc(zeros({2}), undefined())), "div_trunc", "'b'",
              "undefined")
BAD_INPUT_ROW(Ops, minimum_undefined_a, ValueError, (minimum(undefined(), zeros({2}))), "minimum", "'a'", "undefined")
BAD_INPUT_ROW(Ops, add_undefined_b, ValueError, (zeros({2}) + undefined()), "add", "'b'", "undefined")
BAD_INPUT_ROW(Ops, mul_undefined_a, ValueError, (undefined() * zeros({2})), "mul", "'a'", "undefined")
BAD_INPUT_ROW(Ops, add_scalar_undefined, ValueError, (undefined() + 1.0), "add", "'a'", "undefined")
BAD_INPUT_ROW(Ops, rsub_undefined, ValueError, (1.0 - undefined()), "rsub", "'a'", "undefined")
BAD_INPUT_ROW(Ops, rdiv_undefined, ValueError, (1.0 / undefined()), "rdiv", "'a'", "undefined")
BAD_INPUT_ROW(Ops, pow_scalar_undefined, ValueError, (pow(undefined(), 2.0)), "pow", "'a'", "undefined")
BAD_INPUT_ROW(Ops, pow_scalar_base_undefined, ValueError, (pow(2.0, undefined())), "rpow", "'a'", "undefined")
BAD_INPUT_ROW(Ops, neg_undefined, ValueError, (-undefined()), "neg", "'a'", "undefined")
BAD_INPUT_ROW(Ops, exp_undefined, ValueError, (exp(undefined())), "exp", "'a'", "undefined")
BAD_INPUT_ROW(Ops, log_undefined, ValueError, (log(undefined())), "log", "'a'", "undefined")
BAD_INPUT_ROW(Ops, sqrt_undefined, ValueError, (sqrt(undefined())), "sqrt", "'a'", "undefined")
BAD_INPUT_ROW(Ops, abs_undefined, ValueError, (abs(undefined())), "abs", "'a'", "undefined")
BAD_INPUT_ROW(Ops, expm1_undefined, ValueError, (expm1(undefined())), "expm1", "'a'", "undefined")
BAD_INPUT_ROW(Ops, log1p_undefined, ValueError, (log1p(undefined())), "log1p", "'a'", "undefined")
BAD_INPUT_ROW(Ops, rsqrt_undefined, ValueError, (rsqrt(undefined())), "rsqrt", "'a'", "undefined")
BAD_INPUT_ROW(Ops, reciprocal_undefined, ValueError, (reciprocal(undefined())), "reciprocal", "'a'", "undefined")
BAD_INPUT_ROW(Ops, sin_undefined, ValueError, (sin(undefined())), "sin", "'a'", "undefined")
BAD_INPUT_ROW(Ops, cos_undefined, ValueError, (cos(undefined())), "cos", "'a'", "undefined")
BAD_INPUT_ROW(Ops, sign_undefined, ValueError, (sign(undefined())), "sign", "'a'", "undefined")

// ---- activations --------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, relu_undefined, ValueError, (relu(undefined())), "relu", "'a'", "undefined")
BAD_INPUT_ROW(Ops, sigmoid_undefined, ValueError, (sigmoid(undefined())), "sigmoid", "'a'", "undefined")
BAD_INPUT_ROW(Ops, tanh_undefined, ValueError, (tanh(undefined())), "tanh", "'a'", "undefined")
BAD_INPUT_ROW(Ops, gelu_undefined, ValueError, (gelu(undefined(), GeluApproximation::Tanh)), "gelu", "'a'", "undefined")

// ---- reductions ---------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, sum_axis_out_of_range, ValueError, (sum(zeros({2, 3}), {2})), "sum", "axis 2", "[2,3]")
BAD_INPUT_ROW(Ops, sum_axis_named_twice, ValueError, (sum(zeros({2, 3}), {1, -1})), "sum", "axis 1", "twice")
BAD_INPUT_ROW(Ops, sum_axis_1_of_0d, ValueError, (sum(zeros({}), {1})), "sum", "axis 1", "[-1, 0]", "[]")
BAD_INPUT_ROW(Ops, max_dim_over_empty_axis, ValueError, (max(zeros({2, 0}), 1)), "max", "axis 1", "[2,0]", "size 0")
BAD_INPUT_ROW(Ops, min_dim_out_of_range, ValueError, (min(zeros({2, 3}), 2)), "min", "axis 2", "[2,3]")
BAD_INPUT_ROW(Ops, sum_undefined, ValueError, (sum(undefined())), "sum", "'a'", "undefined")
BAD_INPUT_ROW(Ops, mean_negative_axis_out_of_range, ValueError, (mean(zeros({2, 3}), {-3})), "mean", "axis -3", "[2,3]")
BAD_INPUT_ROW(Ops, mean_axes_of_0d_named_twice, ValueError, (mean(zeros({}), {0, -1})), "mean", "axis 0", "twice", "[]")
BAD_INPUT_ROW(Ops, max_of_empty_tensor, ValueError, (max(zeros({0, 3}))), "max", "zero elements", "[0,3]")
BAD_INPUT_ROW(Ops, max_over_empty_axis, ValueError, (max(zeros({2, 0}), {1})), "max", "zero elements", "[2,0]")
BAD_INPUT_ROW(Ops, max_axis_out_of_range, ValueError, (max(zeros({2}), {1}, true)), "max", "axis 1", "[2]")

// ---- shape ops ----------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, reshape_element_count_mismatch, ShapeError, (reshape(zeros({2, 3}), {4, 2})), "reshape", "[2,3]",
              "[4,2]")
BAD_INPUT_ROW(Ops, reshape_two_inferred_sizes, ValueError, (reshape(zeros({2, 3}), {-1, -1})), "reshape", "only one -1",
              "[-1,-1]")
BAD_INPUT_ROW(Ops, reshape_negative_size, ValueError, (view(zeros({2, 3}), {-2, 3})), "reshape", "size -2", "[2,3]")
BAD_INPUT_ROW(Ops, reshape_inferred_next_to_zero, ShapeError, (reshape(zeros({0, 3}), {0, -1})), "reshape", "[0,3]",
              "[0,-1]")
BAD_INPUT_ROW(Ops, permute_wrong_length, ShapeError, (permute(zeros({2, 3, 4}), {1, 0})), "permute", "[1,0]", "[2,3,4]")
BAD_INPUT_ROW(Ops, permute_repeated_axis, ValueError, (permute(zeros({2, 3}), {0, -2})), "permute", "not a permutation",
              "axis 0")
BAD_INPUT_ROW(Ops, permute_axis_out_of_range, ValueError, (permute(zeros({2, 3}), {0, 2})), "permute", "axis 2",
              "[2,3]")
BAD_INPUT_ROW(Ops, transpose_axis_out_of_range, ValueError, (transpose(zeros({2, 3}), 0, 5)), "transpose", "axis 5",
              "[2,3]")
BAD_INPUT_ROW(Ops, unsqueeze_axis_out_of_range, ValueError, (unsqueeze(zeros({2, 3}), 4)), "unsqueeze", "axis 4",
              "[-3, 2]")
BAD_INPUT_ROW(Ops, squeeze_axis_1_of_0d, ValueError, (squeeze(zeros({}), 1)), "squeeze", "axis 1", "[-1, 0]", "[]")
BAD_INPUT_ROW(Ops, transpose_axis_1_of_0d, ValueError, (transpose(zeros({}), 0, 1)), "transpose", "axis 1", "[-1, 0]")
BAD_INPUT_ROW(Ops, index_select_0d_index_not_zero, ValueError, (index_select(zeros({}), 0, one_d({1}))), "index_select",
              "0-d", "[0]", "holding 1")
BAD_INPUT_ROW(Ops, squeeze_axis_out_of_range, ValueError, (squeeze(zeros({2, 1}), 2)), "squeeze", "axis 2", "[2,1]")
BAD_INPUT_ROW(Ops, expand_to_fewer_dims, ShapeError, (expand(zeros({2, 3}), {3})), "expand", "[2,3]", "fewer")
BAD_INPUT_ROW(Ops, expand_non_singleton_axis, ShapeError, (expand(zeros({2, 3}), {2, 4})), "expand", "axis 1", "size 3",
              "4")
BAD_INPUT_ROW(Ops, expand_inferred_new_axis, ValueError, (expand(zeros({3}), {-1, 3})), "expand", "size -1", "axis 0")
BAD_INPUT_ROW(Ops, expand_to_huge_shape, ValueError, (expand(zeros({1}), {Index{1} << 40, Index{1} << 40})), "expand",
              "[1099511627776,1099511627776]", "fit in memory")
BAD_INPUT_ROW(Ops, slice_zero_step, ValueError, (slice(zeros({5}), 0, 0, 5, 0)), "slice", "step", "0")
BAD_INPUT_ROW(Ops, slice_axis_out_of_range, ValueError, (slice(zeros({5}), 1, 0, 5)), "slice", "axis 1", "[5]")
BAD_INPUT_ROW(Ops, narrow_past_the_end, ValueError, (narrow(zeros({5}), 0, 3, 4)), "narrow", "start 3", "length 4",
              "[5]")
BAD_INPUT_ROW(Ops, narrow_negative_length, ValueError, (narrow(zeros({5}), 0, 1, -1)), "narrow", "length -1", "[5]")
BAD_INPUT_ROW(Ops, concat_empty_list, ValueError, (concat(std::vector<Tensor<double>>{})), "concat", "at least one")
BAD_INPUT_ROW(Ops, concat_0d_tensors, ShapeError, (concat({zeros({}), zeros({})})), "concat", "[]", "0-d")
BAD_INPUT_ROW(Ops, concat_rank_mismatch, ShapeError, (concat({zeros({2, 3}), zeros({3})})), "concat", "tensors[1]",
              "[3]", "[2,3]")
BAD_INPUT_ROW(Ops, concat_size_mismatch_off_axis, ShapeError, (concat({zeros({2, 3}), zeros({2, 4})}, 0)), "concat",
              "tensors[1]", "[2,4]", "axis 1")
BAD_INPUT_ROW(Ops, concat_axis_out_of_range, ValueError, (concat({zeros({2}), zeros({2})}, 1)), "concat", "axis 1",
              "[2]")
BAD_INPUT_ROW(Ops, concat_undefined_member, ValueError, (cat({zeros({2}), undefined()})), "concat", "tensors[1]",
              "undefined")
BAD_INPUT_ROW(Ops, chunk_zero_chunks, ValueError, (chunk(zeros({4}), 0)), "chunk", "chunks", "0", "[4]")
BAD_INPUT_ROW(Ops, chunk_axis_out_of_range, ValueError, (chunk(zeros({4}), 2, 1)), "chunk", "axis 1", "[4]")
BAD_INPUT_ROW(Ops, split_zero_size, ValueError, (split(zeros({4}), std::size_t{0})), "split", "split_size", "size 4")
BAD_INPUT_ROW(Ops, split_sizes_do_not_sum, ValueError, (split(zeros({4}), std::vector<std::size_t>{1, 2})), "split",
              "[1,2]", "sum to 3", "4")
BAD_INPUT_ROW(Ops, index_select_2d_index, ShapeError, (index_select(zeros({4, 2}), 0, indices({1, 1}, 0))),
              "index_select", "1-D", "[1,1]", "[4,2]")
BAD_INPUT_ROW(Ops, index_select_out_of_range, ValueError, (index_select(zeros({4, 2}), 0, one_d({0, 4}))),
              "index_select", "index 4", "position 1", "[4,2]")
BAD_INPUT_ROW(Ops, index_select_negative_index, ValueError, (index_select(zeros({4, 2}), 1, one_d({-1}))),
              "index_select", "index -1", "position 0", "[4,2]")
BAD_INPUT_ROW(Ops, index_select_axis_out_of_range, ValueError, (index_select(zeros({4}), 1, one_d({0}))),
              "index_select", "axis 1", "[4]")

// ---- matmul / einsum ----------------------------------------------------------------------
BAD_INPUT_ROW(Ops, matmul_0d_operand, ShapeError, (matmul(zeros({}), zeros({2}))), "matmul", "at least 1 dim", "[]",
              "[2]")
BAD_INPUT_ROW(Ops, matmul_inner_size_mismatch, ShapeError, (matmul(zeros({2, 3}), zeros({4, 5}))), "matmul", "[2,3]",
              "[4,5]")
BAD_INPUT_ROW(Ops, matmul_batch_axes_do_not_broadcast, ShapeError, (matmul(zeros({2, 2, 3}), zeros({3, 3, 4}))),
              "matmul", "[2,2,3]", "[3,3,4]")
BAD_INPUT_ROW(Ops, matmul_vector_size_mismatch, ShapeError, (matmul(zeros({3}), zeros({4}))), "matmul", "[3]", "[4]")
BAD_INPUT_ROW(Ops, matmul_undefined_b, ValueError, (matmul(zeros({2, 2}), undefined())), "matmul", "'b'", "undefined")
BAD_INPUT_ROW(Ops, linear_in_features_mismatch, ShapeError, (linear(zeros({4, 3}), zeros({2, 5}))), "linear", "[4,3]",
              "[2,5]")
BAD_INPUT_ROW(Ops, linear_bias_wrong_length, ShapeError, (linear(zeros({4, 3}), zeros({2, 3}), zeros({3}))), "linear",
              "bias", "[3]", "[2,3]")
BAD_INPUT_ROW(Ops, einsum_operand_count, ValueError, (einsum("ij,jk->ik", zeros({2, 2}))), "einsum", "\"ij,jk->ik\"",
              "describe 2 operand(s)", "1 were given")
BAD_INPUT_ROW(Ops, einsum_invalid_character, ValueError, (einsum("i1->i", zeros({2, 2}))), "einsum", "\"i1->i\"", "'1'")
BAD_INPUT_ROW(Ops, einsum_two_ellipses, ValueError, (einsum("...i...->i", zeros({2, 2}))), "einsum",
              "\"...i...->i\"", "operand 0", "second ellipsis")
BAD_INPUT_ROW(Ops, einsum_dot_outside_ellipsis, ValueError, (einsum("i.->i", zeros({2}))), "einsum", "\"i.->i\"",
              "'.' at position 1")
BAD_INPUT_ROW(Ops, einsum_ellipsis_needs_more_dims, ShapeError, (einsum("...ijk", zeros({2, 2}))), "einsum",
              "operand 0", "[2,2]", "\"...ijk\"", "at least 3")
BAD_INPUT_ROW(Ops, einsum_ellipsis_dims_do_not_broadcast, ShapeError, (einsum("...,...", zeros({2}), zeros({3}))),
              "einsum", "\"...\"", "operand 0 [2]", "operand 1 [3]")
BAD_INPUT_ROW(Ops, einsum_diagonal_sizes_differ, ShapeError, (einsum("ii->i", zeros({3, 1}))), "einsum", "'i'",
              "operand 0 [3,1]", "sizes 3 and 1")
BAD_INPUT_ROW(Ops, einsum_more_than_52_indices, ValueError,
              (einsum("...ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", zeros(Shape(53, 1)))), "einsum",
              "covers 1 dims", "at most 52")
BAD_INPUT_ROW(Ops, einsum_repeated_output_index, ValueError, (einsum("ij->ii", zeros({2, 2}))), "einsum", "\"ij->ii\"",
              "'i'")
BAD_INPUT_ROW(Ops, einsum_output_index_in_no_operand, ValueError, (einsum("ij->k", zeros({2, 2}))), "einsum",
              "\"ij->k\"", "'k'")
BAD_INPUT_ROW(Ops, einsum_rank_mismatch, ShapeError, (einsum("ibhd,jbhd->ijbh", zeros({5, 3, 2, 4}), zeros({5, 3, 2}))),
              "einsum", "operand 1", "[5,3,2]", "\"jbhd\"")
BAD_INPUT_ROW(Ops, einsum_index_with_two_sizes, ShapeError, (einsum("ij,jk->ik", zeros({2, 3}), zeros({4, 2}))),
              "einsum", "'j'", "3", "4")
BAD_INPUT_ROW(Ops, einsum_undefined_operand, ValueError, (einsum("i,i->", zeros({2}), undefined())), "einsum",
              "operand 1", "undefined")
BAD_INPUT_ROW(Ops, einsum_two_arrows, ValueError, (einsum("i->i->i", zeros({2}))), "einsum", "\"i->i->i\"")

// ---- softmax / layer_norm -----------------------------------------------------------------
BAD_INPUT_ROW(Ops, softmax_axis_out_of_range, ValueError, (softmax(zeros({2, 3}), 2)), "softmax", "axis 2", "[2,3]")
BAD_INPUT_ROW(Ops, softmax_axis_1_of_0d, ValueError, (softmax(zeros({}), 1)), "softmax", "axis 1", "[-1, 0]", "[]")
BAD_INPUT_ROW(Ops, softmax_undefined, ValueError, (softmax(undefined(), -1)), "softmax", "'a'", "undefined")
BAD_INPUT_ROW(Ops, log_softmax_axis_out_of_range, ValueError, (log_softmax(zeros({2, 3}), -3)), "log_softmax",
              "axis -3", "[2,3]")
BAD_INPUT_ROW(Ops, attention_softmax_mask_does_not_broadcast, ShapeError,
              (attention_softmax(zeros({2, 3}), AttendMask(mask_of({4})), 1.0)), "attention_softmax", "[4]", "[2,3]")
BAD_INPUT_ROW(Ops, attention_softmax_0d_scores, ShapeError, (attention_softmax(zeros({}), std::nullopt, 1.0)),
              "attention_softmax", "[]")
BAD_INPUT_ROW(Ops, attention_softmax_nan_scale, ValueError, (attention_softmax(zeros({2, 3}), std::nullopt, nan)),
              "attention_softmax", "scale", "nan")
BAD_INPUT_ROW(Ops, layer_norm_empty_normalized_shape, ShapeError, (layer_norm(zeros({2, 3}), {})), "layer_norm",
              "normalized_shape []", "[2,3]")
BAD_INPUT_ROW(Ops, layer_norm_not_trailing_dims, ShapeError, (layer_norm(zeros({2, 3}), {2})), "layer_norm",
              "normalized_shape [2]", "[2,3]")
BAD_INPUT_ROW(Ops, layer_norm_longer_than_input, ShapeError, (layer_norm(zeros({3}), {2, 3})), "layer_norm",
              "normalized_shape [2,3]", "[3]")
BAD_INPUT_ROW(Ops, layer_norm_weight_shape, ShapeError, (layer_norm(zeros({2, 3}), {3}, zeros({2}))), "layer_norm",
              "weight", "[2]", "[3]")
BAD_INPUT_ROW(Ops, layer_norm_bias_shape, ShapeError, (layer_norm(zeros({2, 3}), {3}, zeros({3}), zeros({3, 1}))),
              "layer_norm", "bias", "[3,1]", "[3]")
BAD_INPUT_ROW(Ops, layer_norm_zero_eps, ValueError, (layer_norm(zeros({2, 3}), {3}, {}, {}, 0.0)), "layer_norm", "eps",
              "0")
BAD_INPUT_ROW(Ops, layer_norm_nan_eps, ValueError, (layer_norm(zeros({2, 3}), {3}, {}, {}, nan)), "layer_norm", "eps",
              "nan")
BAD_INPUT_ROW(Ops, layer_norm_infinite_eps, ValueError, (layer_norm(zeros({2, 3}), {3}, {}, {}, inf)), "layer_norm",
              "eps", "inf")
BAD_INPUT_ROW(Ops, layer_norm_undefined_x, ValueError, (layer_norm(undefined(), {3})), "layer_norm", "'x'", "undefined")

// ---- masked_fill / dropout ----------------------------------------------------------------
BAD_INPUT_ROW(Ops, masked_fill_mask_does_not_broadcast, ShapeError, (masked_fill(zeros({2, 3}), mask_of({2}), 0.0)),
              "masked_fill", "[2]", "[2,3]")
BAD_INPUT_ROW(Ops, masked_fill_input_and_mask_do_not_broadcast, ShapeError,
              (masked_fill(zeros({3}), mask_of({2, 2}), 0.0)), "masked_fill", "[3]", "[2,2]")
BAD_INPUT_ROW(Ops, attend_mask_and_does_not_broadcast, ShapeError,
              (AttendMask(mask_of({2})) && AttendMask(mask_of({3}))), "AttendMask && AttendMask", "[2]", "[3]")
BAD_INPUT_ROW(Ops, masked_fill_undefined, ValueError, (masked_fill(undefined(), mask_of({2}), 0.0)), "masked_fill",
              "'a'", "undefined")
BAD_INPUT_ROW(Ops, dropout_p_above_one, ValueError, (dropout(zeros({2}), 1.5, true, gen())), "dropout", "[0, 1]", "1.5")
BAD_INPUT_ROW(Ops, dropout_negative_p, ValueError, (dropout(zeros({2}), -0.1, true, gen())), "dropout", "p", "-0.1")
BAD_INPUT_ROW(Ops, dropout_nan_p, ValueError, (dropout(zeros({2}), nan, false, gen())), "dropout", "p", "nan")
BAD_INPUT_ROW(Ops, dropout_undefined, ValueError, (dropout(undefined(), 0.5, true, gen())), "dropout", "'a'",
              "undefined")

// ---- embedding ----------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, embedding_weight_not_2d, ShapeError, (embedding(zeros({4}), one_d({0}))), "embedding", "2-D", "[4]")
BAD_INPUT_ROW(Ops, embedding_index_out_of_range, ValueError, (embedding(zeros({4, 2}), one_d({1, 4}))), "embedding",
              "index 4", "position", "4")
BAD_INPUT_ROW(Ops, embedding_negative_index, ValueError, (embedding(zeros({4, 2}), one_d({-1}))), "embedding",
              "index -1", "4")
BAD_INPUT_ROW(Ops, embedding_padding_idx_out_of_range, ValueError, (embedding(zeros({4, 2}), one_d({0}), 4)),
              "embedding", "padding_idx 4", "4")
BAD_INPUT_ROW(Ops, embedding_undefined_weight, ValueError, (embedding(undefined(), one_d({0}))), "embedding",
              "'weight'", "undefined")

// ---- losses -------------------------------------------------------------------------------
BAD_INPUT_ROW(Ops, cross_entropy_target_out_of_range, ValueError, (cross_entropy(zeros({2, 3}), one_d({0, 3}))),
              "cross_entropy", "target 3", "position [1]", "[0, 3)")
BAD_INPUT_ROW(Ops, cross_entropy_negative_target, ValueError, (cross_entropy(zeros({2, 3}), one_d({-1, 0}))),
              "cross_entropy", "target -1", "position [0]", "ignore_index -100")
BAD_INPUT_ROW(Ops, cross_entropy_target_shape, ShapeError, (cross_entropy(zeros({2, 3}), one_d({0, 1, 2}))),
              "cross_entropy", "targets [3]", "[2,3]")
BAD_INPUT_ROW(Ops, cross_entropy_0d_logits, ShapeError, (cross_entropy(zeros({}), indices({}, 0))), "cross_entropy",
              "logits []", "class axis")
BAD_INPUT_ROW(Ops, cross_entropy_label_smoothing_above_one, ValueError,
              (cross_entropy(zeros({2, 3}), one_d({0, 1}), {.label_smoothing = 1.5})), "cross_entropy",
              "label_smoothing 1.5")
BAD_INPUT_ROW(Ops, cross_entropy_label_smoothing_nan, ValueError,
              (cross_entropy(zeros({2, 3}), one_d({0, 1}), {.label_smoothing = nan})), "cross_entropy",
              "label_smoothing nan")
BAD_INPUT_ROW(Ops, cross_entropy_batchmean_reduction, ValueError,
              (cross_entropy(zeros({2, 3}), one_d({0, 1}), {.reduction = Reduction::BatchMean})), "cross_entropy",
              "reduction", "BatchMean")
BAD_INPUT_ROW(Ops, cross_entropy_undefined_logits, ValueError, (cross_entropy(undefined(), one_d({0}))),
              "cross_entropy", "'logits'", "undefined")
BAD_INPUT_ROW(Ops, nll_loss_target_out_of_range, ValueError, (nll_loss(zeros({2, 3}), one_d({5, 0}))), "nll_loss",
              "target 5", "position [0]")
BAD_INPUT_ROW(Ops, nll_loss_target_shape, ShapeError, (nll_loss(zeros({2, 3, 4}), indices({2, 3}, 0))), "nll_loss",
              "targets [2,3]", "[2,3,4]")
BAD_INPUT_ROW(Ops, kl_div_shape_mismatch, ShapeError, (kl_div(zeros({2, 3}), zeros({3, 2}))), "kl_div", "[2,3]",
              "[3,2]")
BAD_INPUT_ROW(Ops, mse_loss_batchmean_reduction, ValueError, (mse_loss(zeros({2}), zeros({2}), Reduction::BatchMean)),
              "mse_loss", "BatchMean", "[2]")
BAD_INPUT_ROW(Ops, nll_loss_batchmean_reduction, ValueError,
              (nll_loss(zeros({2, 3}), indices({2}, 0), {.reduction = Reduction::BatchMean})), "nll_loss", "BatchMean",
              "[2,3]")
BAD_INPUT_ROW(Ops, mse_loss_shape_mismatch, ShapeError, (mse_loss(zeros({2, 3}), zeros({3}))), "mse_loss", "[2,3]",
              "[3]")
BAD_INPUT_ROW(Ops, mse_loss_undefined_target, ValueError, (mse_loss(zeros({2}), undefined())), "mse_loss", "'target'",
              "undefined")

}  // namespace
}  // namespace tapegrad::bad_inputs
