// Rows of docs/bad-inputs.md, sections "trust: shape arithmetic that overflows" and "trust:
// requests too large for memory": shapes whose sizes multiply past 2^63 (each once wrapped around
// and crashed or made a tensor whose shape did not match its storage) and requests no machine
// can hold (each once a bare std::bad_alloc). Both go through checked_numel/allocatable.
#include <cstdint>
#include <string>

#include <xtensor/xnpy.hpp>

#include "autograd/testing/gradcheck.h"
#include "autograd/ops/all.h"
#include "nn/io/checkpoint.h"
#include "nn/masks.h"
#include "nn/transformer/masks.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

constexpr Index k2to32 = Index{1} << 32;
constexpr std::size_t k2to20 = std::size_t{1} << 20;
// (2^62 + 1) * 4 = 2^64 + 4: wraps around to 4.
constexpr Index kWrapsTo4 = (Index{1} << 62) + 1;

// A tensor with no elements but sizes that multiply past 2^63 once the zero axis is reduced away;
// built from an xarray because the Tensor factories refuse such a shape.
Tensor<double> empty_of(const Shape& shape) { return Tensor<double>(xt::xarray<double>::from_shape(shape)); }

// A .npy file of 4 doubles whose header claims shape [2^62 + 1, 4]: xnpy's byte count wraps to
// the 32 bytes the file has. The header keeps its length (the longer shape eats padding).
std::filesystem::path npy_claiming_wrapped_shape() {
  std::string bytes = xt::dump_npy(xt::xarray<double>(xt::zeros<double>({1, 4})));
  const std::string from = "(1, 4)", to = "(" + std::to_string(kWrapsTo4) + ", 4)";
  bytes.replace(bytes.find(from), from.size(), to);
  bytes.erase(bytes.find('\n') - (to.size() - from.size()), to.size() - from.size());
  return write_scratch("wrapped.npy", bytes);
}

// ---- shape arithmetic that overflows --------------------------------------------------------
BAD_INPUT_CRASH_ROW(Shape, reshape_product_wraps, ValueError, (reshape(zeros({4}), {kWrapsTo4, 4})), "reshape",
                    "the new shape", "[4611686018427387905,4]", "2^63")
BAD_INPUT_CRASH_ROW(Shape, view_inferred_product_wraps, ValueError, (view(zeros({4}), {-1, kWrapsTo4, 4})), "reshape",
                    "without its -1", "[4611686018427387905,4]", "2^63")
BAD_INPUT_CRASH_ROW(Shape, split_sizes_wrap_to_axis_size, ValueError,
                    (split(zeros({4}), std::vector<std::size_t>{8, SIZE_MAX - 3})), "split",
                    "[8,18446744073709551612]", "more than 4", "[4]")
BAD_INPUT_ROW(Shape, concat_axis_sum_wraps, ValueError,
              (concat({empty_of({1ul << 62, 0}), empty_of({1ul << 62, 0}), empty_of({1ul << 62, 0}),
                       empty_of({1ul << 62, 0})})),
              "concat", "tensors[3]", "[4611686018427387904,0]", "sum past 2^64")
BAD_INPUT_ROW(Shape, add_broadcast_shape_overflows, ValueError,
              (empty_of({std::size_t(k2to32), 1, 0}) + empty_of({1, std::size_t(k2to32), 0})), "add",
              "the broadcast shape", "[4294967296,4294967296,0]", "2^63")
BAD_INPUT_CRASH_ROW(Shape, matmul_output_wraps_over_empty_k, ValueError,
                    (matmul(empty_of({std::size_t(k2to32), 0}), empty_of({0, std::size_t(k2to32)}))), "matmul",
                    "the output", "[4294967296,4294967296]", "2^63")
BAD_INPUT_CRASH_ROW(Shape, einsum_output_wraps_over_empty_letter, ValueError,
                    (einsum("ia,ja->ij", empty_of({std::size_t(k2to32), 0}), empty_of({std::size_t(k2to32), 0}))),
                    "einsum(\"ia,ja->ij\")", "the output", "[4294967296,4294967296]", "2^63")
BAD_INPUT_CRASH_ROW(Shape, sum_output_wraps_over_empty_axis, ValueError,
                    (sum(empty_of({std::size_t(k2to32), 0, std::size_t(k2to32)}), {1})), "sum", "the output",
                    "[4294967296,4294967296]", "2^63")
BAD_INPUT_CRASH_ROW(Shape, look_ahead_mask_size_wraps, ValueError, (nn::create_look_ahead_mask(std::size_t{1} << 33)),
                    "create_look_ahead_mask", "the mask", "[8589934592,8589934592]", "2^63")
BAD_INPUT_CRASH_ROW(Shape, npy_shape_wraps_to_data_size, ValueError, (nn::load_npy<double>(npy_claiming_wrapped_shape())),
                    "load_npy", "wrapped.npy", "the header's shape", "[4611686018427387905,4]", "2^63")

// ---- requests too large for memory ----------------------------------------------------------
BAD_INPUT_ROW(Shape, matmul_output_too_large, ValueError,
              (matmul(empty_of({k2to20, 0}), empty_of({0, k2to20}))), "matmul", "the output", "[1048576,1048576]",
              "needs 8 TiB", "more than can fit in memory")
BAD_INPUT_ROW(Shape, add_output_too_large, ValueError, (zeros({k2to20, 1}) + zeros({1, k2to20})), "add", "the output",
              "[1048576,1048576]", "needs 8 TiB", "more than can fit in memory")
BAD_INPUT_ROW(Shape, einsum_output_too_large, ValueError, (einsum("i,j->ij", zeros({k2to20}), zeros({k2to20}))),
              "einsum(\"i,j->ij\")", "the output", "[1048576,1048576]", "needs 8 TiB")
BAD_INPUT_ROW(Shape, gradcheck_jacobian_too_large, ValueError,
              (gradcheck([](const std::vector<Tensor<double>>& x) { return x[0] * 2.0; }, {leaf({k2to20})})),
              "gradcheck", "the Jacobian [output elements, input elements]", "[1048576,1048576]", "needs 8 TiB")
BAD_INPUT_ROW(Shape, chunk_empty_axis_into_too_many_pieces, ValueError, (chunk(zeros({0}), std::size_t{1} << 40)), "chunk",
              "the list of pieces", "[1099511627776]", "more than can fit in memory")
BAD_INPUT_ROW(Shape, split_huge_empty_axis_into_pieces_of_one, ValueError,
              (split(empty_of({std::size_t{1} << 40, 0}), 1)), "split", "the list of pieces", "[1099511627776]",
              "more than can fit in memory")
BAD_INPUT_ROW(Shape, tgt_mask_too_large, ValueError, (nn::transformer::make_tgt_mask(indices({1, 1u << 22}, 1), 0)),
              "make_tgt_mask", "the mask", "[1,4194304,4194304]", "needs 16 TiB")

}  // namespace
}  // namespace tapegrad::bad_inputs
