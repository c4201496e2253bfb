// Writes the seed corpus kept in fuzz/corpus/ (see README.md): `make_seed_corpus <dir>` creates
// <dir>/safetensors/, <dir>/einsum/, <dir>/shapes/ and <dir>/tape_sequences/. Valid safetensors seeds come from our own
// writers (save_safetensors, save_checkpoint), so they follow the format exactly; the malformed
// ones are written byte by byte, one defect each.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/checkpoint_model.h"
#include "fuzz/einsum_input.h"
#include "fuzz/shape_input.h"
#include "fuzz/tape_program.h"
#include "nn/io/checkpoint.h"

namespace {

using namespace tapegrad;
namespace fs = std::filesystem;

void write_raw(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_raw(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A safetensors file from a header written by hand, its length field saying `header_len`.
std::string with_header(const std::string& header, const std::string& data, std::uint64_t header_len) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header_len >> (8 * i)) & 0xff));
  return bytes + header + data;
}
std::string with_header(const std::string& header, const std::string& data) {
  return with_header(header, data, header.size());
}

void safetensors_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  nn::StateDict<float> f32{{"w", xt::xarray<float>{{1.5f, -2.0f, 0.25f}, {3.0f, 4.0f, -0.0f}}},
                           {"scalar", xt::xarray<float>(2.5f)}};
  nn::save_safetensors(dir / "f32_with_metadata.safetensors", f32, {{"format", "pt"}});
  nn::StateDict<double> f64{{"b", xt::xarray<double>{1.0, 2.0}}, {"empty", xt::xarray<double>::from_shape({0, 3})}};
  nn::save_safetensors(dir / "f64_with_empty_tensor.safetensors", f64);
  nn::save_safetensors(dir / "no_tensors.safetensors", nn::StateDict<float>{});

  // Our training checkpoint: parameters, optimiser state, step and generator states; loaded back
  // strictly, so the fuzzer starts from inputs that reach the end of load_checkpoint.
  for (bool f64_model : {false, true}) {
    const fs::path path = dir / (f64_model ? "checkpoint_f64.safetensors" : "checkpoint_f32.safetensors");
    Generator data(7);
    if (f64_model) {
      auto model = fuzz::checkpoint_model<double>();
      nn::StateDict<double> adam{{"0.weight.exp_avg", xt::zeros<double>({2, 3})}, {"0.weight.step", xt::xarray<double>(3.0)}};
      nn::save_checkpoint<double>(path, *model, adam, 3, {{"data", &data}});
      nn::load_checkpoint<double>(path, *fuzz::checkpoint_model<double>(), /*strict=*/true, {{"data", &data}});
    } else {
      auto model = fuzz::checkpoint_model<float>();
      nn::StateDict<float> adam{{"0.weight.exp_avg", xt::zeros<float>({2, 3})}, {"0.weight.step", xt::xarray<float>(3.0f)}};
      nn::save_checkpoint<float>(path, *model, adam, 3, {{"data", &data}});
      nn::load_checkpoint<float>(path, *fuzz::checkpoint_model<float>(), /*strict=*/true, {{"data", &data}});
    }
  }

  // One defect each.
  const std::string checkpoint = read_raw(dir / "checkpoint_f32.safetensors");
  write_raw(dir / "bad_truncated_data.safetensors", checkpoint.substr(0, checkpoint.size() - 5));
  write_raw(dir / "bad_truncated_header.safetensors", checkpoint.substr(0, 40));
  const std::string one = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string eight(8, '\x01');
  write_raw(dir / "bad_header_length_too_large.safetensors", with_header(one, eight, std::uint64_t(1) << 62));
  write_raw(dir / "bad_huge_shape_claim.safetensors",
            with_header(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight));
  write_raw(dir / "bad_huge_offsets_claim.safetensors",
            with_header(R"({"w":{"dtype":"F64","shape":[1099511627776],"data_offsets":[0,8796093022208]}})", eight));
  write_raw(dir / "bad_strides_past_2_63.safetensors",
            with_header(R"({"w":{"dtype":"F32","shape":[0,9223372036854775807,9223372036854775807],)"
                        R"("data_offsets":[0,0]}})",
                        ""));
  write_raw(dir / "bad_tensor_named_twice.safetensors",
            with_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                        eight));
  write_raw(dir / "bad_overlap.safetensors",
            with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        eight));
  write_raw(dir / "bad_unknown_dtype.safetensors",
            with_header(R"({"w":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", eight));
  write_raw(dir / "bad_nested_shape.safetensors",
            with_header(R"({"w":{"dtype":"F32","shape":[[[[2]]]],"data_offsets":[0,8]}})", eight));
  write_raw(dir / "bad_metadata_not_string.safetensors",
            with_header(R"({"__metadata__":{"step":[1,{"a":null}]},)" + one.substr(1), eight));
  write_raw(dir / "bad_json.safetensors", with_header(R"({"w":{"dtype":"F32",)", eight));
  write_raw(dir / "bad_step_not_decimal.safetensors",
            with_header(R"({"__metadata__":{"step":"-1","generator.1.seed":"9","generator.1.offset":"x"}})", ""));
}

void einsum_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  struct Seed {
    const char* name;
    const char* subscripts;
    std::vector<Shape> shapes;
    bool alias = false;
  };
  const std::vector<Seed> seeds = {
      {"attention_scores", "ibhd,jbhd->ijbh", {{3, 2, 2, 4}, {4, 2, 2, 4}}},
      {"attention_values", "ijbh,jbhd->ibhd", {{3, 4, 2, 2}, {4, 2, 2, 3}}},
      {"relative_positions", "ijk,hkl->hijl", {{2, 3, 4}, {2, 4, 3}}},
      {"batched_matmul", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 3}}},
      {"matmul_implicit_output", "ij,jk", {{2, 3}, {3, 2}}},
      {"chain_of_three", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"outer_product", "i,j->ij", {{3}, {4}}},
      {"same_tensor_twice", "ij,ij->ij", {{2, 3}, {2, 3}}, true},
      {"trace", "ii->", {{4, 4}}},
      {"trace_implicit", "ii", {{3, 3}}},
      {"diagonal", "ii->i", {{3, 3}}},
      {"repeated_index_and_permute", "iij->ji", {{2, 2, 3}}},
      {"transpose", "ij->ji", {{2, 3}}},
      {"sum_all", "ij->", {{3, 4}}},
      {"scalars", ",->", {{}, {}}},
      {"empty_axis", "i,i->", {{0}, {0}}},
      {"size_one_axes", "ab,bc->ac", {{1, 4}, {4, 1}}},
      {"spaces", " ij , jk -> ik ", {{2, 3}, {3, 2}}},
      {"ellipsis_batch_matmul", "...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 3}}},
      {"ellipsis_broadcast", "...ij,...jk", {{2, 1, 3, 4}, {3, 4, 2}}},
      {"ellipsis_between_letters", "i...j,j...k->i...k", {{3, 1, 2, 2}, {2, 2, 3, 1, 4}}},
      {"size_one_index_broadcast", "ij,jk", {{3, 1}, {4, 2}}},
      {"bad_two_ellipses", "...i...->i", {{2, 2}}},
      {"bad_ellipsis_dims", "...,...", {{2}, {3}}},
      {"bad_size_mismatch", "ij,jk->ik", {{2, 3}, {4, 2}}},
      {"bad_rank", "ibhd,jbhd->ijbh", {{3, 2, 2, 4}, {4, 2, 2}}},
      {"bad_repeated_output", "ij->ii", {{2, 2}}},
      {"bad_output_letter_in_no_operand", "ij->k", {{2, 2}}},
      {"bad_operand_count", "ij,jk->ik", {{2, 3}}},
      {"bad_arrow", "ij-k", {{2, 3}}},
  };
  for (const Seed& s : seeds) write_raw(dir / s.name, fuzz::encode_einsum_input(s.subscripts, s.shapes, s.alias));
}

void shape_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  constexpr std::uint64_t kMinus1 = std::uint64_t(-1), kWraps = (std::uint64_t(1) << 62) + 1;
  constexpr std::uint64_t kHuge = std::uint64_t(1) << 40, kHalf = std::uint64_t(1) << 63;
  struct Seed {
    const char* name;
    unsigned op;  // shape_input.h's numbering
    Shape shape;
    std::vector<std::uint64_t> arguments;
  };
  const std::vector<Seed> seeds = {
      {"reshape", 0, {2, 3}, {3, 2}},
      {"reshape_inferred", 0, {2, 3, 4}, {4, kMinus1}},
      {"view_to_scalar", 1, {1, 1}, {}},
      {"expand", 2, {3, 1}, {2, 3, 4}},
      {"split_size", 3, {5, 2}, {2, 0}},
      {"split_sizes", 4, {2, 5}, {1, 1, 3, 1}},
      {"chunk", 5, {5, 2}, {3, 0}},
      {"narrow", 6, {4, 3}, {1, 1, 2}},
      {"slice_step", 7, {5, 4}, {0, 1, 5, 2}},
      {"empty_axis_huge_neighbour", 5, {0, kHuge}, {3, 0}},
      {"empty_tensor_windows_at_offsets", 5, {3, 0, 3}, {3, kMinus1}},  // found: null data() + offset
      {"bad_reshape_product_wraps", 0, {4}, {kWraps, 4}},
      {"bad_reshape_half_twice", 0, {0}, {kHalf, 2, 0}},
      {"bad_split_sizes_wrap", 4, {4}, {0, 5, kMinus1}},
      {"bad_chunk_size_max", 5, {4}, {kMinus1, 0}},
      {"bad_expand_huge", 2, {1}, {kHuge, kHuge}},
      {"bad_narrow_huge_length", 6, {4}, {0, 1, kHalf - 1}},
      {"bad_zeros_negative_size", 0, {2, kMinus1}, {}},
  };
  for (const Seed& s : seeds) write_raw(dir / s.name, fuzz::encode_shape_input(s.op, s.shape, s.arguments));
}

// Programs (tape_program.h) that each reach one feature of the tape; slots are numbered in the
// order the program makes tensors, tape 0 is the outermost.
void tape_sequence_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  using namespace fuzz;
  // Leaves [3] and [2,3] requiring gradients, under one tape: slots 0 and 1.
  const std::initializer_list<int> two_leaves = {kPushTape, 0, kLeaf, 0, 3, 1, kLeaf, 1, 9, 1};
  const auto with_two_leaves = [&](std::initializer_list<int> rest) {
    std::string bytes = tape_program(two_leaves);
    return bytes + tape_program(rest);
  };
  const std::vector<std::pair<const char*, std::string>> seeds = {
      // #2 = #0 * #1 (broadcast), #3 = sum: backward, then backward on the spent tape.
      {"broadcast_backward_twice", with_two_leaves({kBinary, 0, 1, 2, kReduce, 2, 0, kBackward, 0, 3, 0, kBackward, 0, 3, 0})},
      // #2 = #0 * #0, #3 = tanh, backward from a [3] output with a lent seed of ones.
      {"same_tensor_twice_lent_seed", with_two_leaves({kBinary, 0, 0, 2, kUnary, 2, 0, kBackward, 0, 3, 1})},
      {"identity_hooks_on_a_leaf",
       with_two_leaves({kHook, 0, kArrayObserves, 0, kHook, 0, kTensorReturnsIt, 0, kHook, 0, kArrayCopies, 0, kBinary,
                        0, 1, 0, kBinary, 2, 0, 2, kReduce, 3, 1, kBackward, 0, 4, 0})},
      {"hook_removes_itself_on_a_persistent_tape",
       tape_program({kPushTape, 1, kLeaf, 0, 3, 1, kHook, 0, kRemovesItself, 0, kUnary, 0, 3, kReduce, 1, 0, kBackward,
                     0, 2, 0, kBackward, 0, 2, 0})},
      {"hook_removes_another_on_an_intermediate",
       with_two_leaves({kUnary, 1, 0, kHook, 2, kRemovesAnother, 1, kHook, 2, kTensorObserves, 0, kReduce, 2, 1,
                        kBackward, 0, 3, 0})},
      {"hook_runs_its_own_backward",
       with_two_leaves({kUnary, 0, 1, kHook, 2, kRunsOwnBackward, 0, kHook, 0, kRunsOwnBackward, 0, kReduce, 2, 0,
                        kBackward, 0, 3, 0})},
      {"hook_throws", with_two_leaves({kHook, 0, kThrows, 0, kReduce, 0, 0, kBackward, 0, 2, 0, kZeroGrad, 0})},
      {"hook_clears_the_walking_tape",
       with_two_leaves({kPushTape, 1, kUnary, 1, 0, kHook, 2, kClearsTape, 1, kReduce, 2, 0, kBackward, 1, 3, 0,
                        kBackward, 0, 3, 0})},
      // #2 under the outer tape only, #3 under both; backward on the outer tape after the pop.
      {"nested_tapes", with_two_leaves({kUnary, 1, 0, kPushTape, 0, kBinary, 2, 0, 0, kReduce, 3, 1, kPopTape,
                                        kBackward, 0, 4, 0})},
      // #2 made before any tape: a constant. Then a tape, and #3 = #2 * #0.
      {"op_before_any_tape", tape_program({kLeaf, 0, 3, 1, kUnary, 0, 1, kPushTape, 0, kBinary, 1, 0, 2, kReduce, 2, 0,
                                           kBackward, 0, 3, 0})},
      {"gradient_create_graph_then_second",
       tape_program({kPushTape, 1, kLeaf, 0, 5, 1, kHook, 0, kTensorReturnsIt, 0, kUnary, 0, 0, kBinary, 1, 0, 2,
                     kReduce, 2, 0, kGradient, 0, 3, 0, 0, 3})},
      {"gradient_of_a_leaf_and_an_intermediate",
       with_two_leaves({kUnary, 1, 0, kRetainGrad, 2, kHook, 2, kArrayObserves, 0, kReduce, 2, 1, kGradient, 0, 3, 1, 1,
                        2, 0, kBackward, 0, 3, 0})},
      {"retain_zero_grad_clear",
       with_two_leaves({kPushTape, 1, kBinary, 0, 1, 1, kRetainGrad, 2, kReduce, 2, 0, kBackward, 1, 3, 0, kZeroGrad, 0,
                        kBackward, 1, 3, 0, kClearTape, 1, kBackward, 1, 3, 0})},
      {"custom_op_backward_throws",
       with_two_leaves({kThrowingOp, 0, kHook, 0, kArrayObserves, 0, kReduce, 2, 0, kBinary, 3, 3, 0, kBackward, 0, 4, 0})},
      // #2 = tanh(#1), #3 = a custom op of #1 that also adds into #2, older than it.
      {"custom_op_adds_into_unlisted",
       with_two_leaves({kUnary, 1, 0, kUnlistedOp, 1, 2, kReduce, 3, 0, kReduce, 2, 0, kBinary, 4, 5, 0, kBackward, 0, 6,
                        0})},
      {"threads_into_a_hooked_leaf",
       with_two_leaves({kHook, 0, kArrayCopies, 0, kHook, 0, kRemovesItself, 0, kThreads, 0, 1, kThreads, 1, 0})},
      // The inputs of what the fuzzer found (README.md, "What the fuzzers found"). Two threads walk
      // into a leaf whose hook removes itself: one walk's total can be dropped (a race: it shows
      // in about one run in thousands).
      {"found_threads_while_a_hook_removes_itself",
       tape_program({kPushTape, 0, kLeaf, 0, 0, 1, kHook, 0, kRemovesItself, 0, kThreads, 0, 1})},
      // #1 = #0 / 2 under the outer tape; #2, on the inner tape too, adds into #1 without listing
      // it; a backward on the inner tape drops that gradient (1 instead of 1.5).
      {"found_unlisted_intermediate_not_on_the_tape",
       tape_program({kPushTape, 0, kLeaf, 3, 0, 1, kUnary, 0, 3, kPushTape, 1, kUnlistedOp, 0, 1, kBackward, 1, 2, 0})},
      // A backward on the inner tape throws (#1 is not on it) and leaves its seed in #2's grad().
      {"found_failed_walk_leaves_the_seed",
       tape_program({kPushTape, 0, kLeaf, 0, 0, 1, kBinary, 0, 0, 2, kPushTape, 0, kUnary, 1, 0, kBackward, 1, 2, 1})},
      // Two threads walk into a leaf whose hook clears the main thread's tape: both cleared it at
      // once and freed its entries twice (ASan); clear() from another thread now throws.
      {"found_threads_clear_the_main_threads_tape",
       tape_program({kPushTape, 1, kLeaf, 0, 0, 1, kHook, 0, kClearsTape, 0, kUnary, 0, 0, kThreads, 0, 1})},
      // gradient() sets a retained intermediate's grad(), which core/tape.h says it does not change.
      {"found_gradient_sets_a_retained_grad",
       tape_program({kPushTape, 0, kLeaf, 1, 9, 1, kUnary, 0, 0, kRetainGrad, 1, kReduce, 1, 1, kGradient, 0, 2, 0, 0, 0})},
  };
  for (const auto& [name, bytes] : seeds) write_raw(dir / name, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seed_corpus <dir>  (writes <dir>/safetensors/, <dir>/einsum/, <dir>/shapes/ and <dir>/tape_sequences/)\n";
    return 2;
  }
  safetensors_seeds(fs::path(argv[1]) / "safetensors");
  einsum_seeds(fs::path(argv[1]) / "einsum");
  shape_seeds(fs::path(argv[1]) / "shapes");
  tape_sequence_seeds(fs::path(argv[1]) / "tape_sequences");
  return 0;
}
