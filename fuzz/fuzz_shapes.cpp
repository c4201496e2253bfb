// libFuzzer target: shape arithmetic. reshape, view, expand, split, chunk, narrow and slice of a
// tensor of a fuzzer-chosen shape, with fuzzer-chosen targets, sizes and bounds drawn from values
// that wrap around 2^64 when multiplied or added (format in shape_input.h).
//
// Property: the input tensor is made or refused with a tapegrad::Error, and so is every op's
// result; ASan/UBSan stop on any bad memory access or overflow, libFuzzer on any other exception
// (std::bad_alloc included). Every result's shape multiplies, without overflow, to the number of
// elements its storage holds; reshape/view keep the elements in order, and the pieces of split and
// chunk join back into the input. A backward through all results then gives the input a gradient
// of its own shape. A broken property aborts with a message.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "fuzz/shape_input.h"

namespace {

using namespace tapegrad;

const char* const kOpNames[] = {"reshape", "view", "expand", "split(size)", "split(sizes)", "chunk", "narrow", "slice"};

// A broken property: say which, then abort so that libFuzzer saves the input.
void require(bool holds, const char* property, const fuzz::ShapeInput& input) {
  if (holds) return;
  std::fprintf(stderr, "fuzz_shapes: %s of %s broke the property: %s\n", kOpNames[input.op],
               format_shape(input.shape).c_str(), property);
  std::abort();
}

// The shape's element count without wrapping; false when it does not fit in 64 bits.
bool exact_numel(const Shape& shape, std::size_t& numel) {
  numel = 1;
  bool overflow = false;
  for (const std::size_t d : shape) overflow = __builtin_mul_overflow(numel, d, &numel) || overflow;
  return !overflow || numel == 0;  // a zero size makes the product 0 whatever came before
}

// Argument i, as unsigned and as signed; missing arguments are 0.
std::uint64_t unsigned_arg(const fuzz::ShapeInput& input, std::size_t i) {
  return i < input.arguments.size() ? input.arguments[i] : std::uint64_t{0};
}
Index signed_arg(const fuzz::ShapeInput& input, std::size_t i) { return static_cast<Index>(unsigned_arg(input, i)); }

// split and chunk take their axis after the size; split(sizes) first.
Index axis_of_pieces(const fuzz::ShapeInput& input) { return signed_arg(input, input.op == 4 ? 0 : 1); }

// Pieces that split / chunk would make and may (the library refuses only lists no machine holds):
// a huge axis of an empty tensor cut small makes millions, too slow for a fuzzer. 0 when the
// arguments are invalid (the op throws).
std::size_t piece_count(const fuzz::ShapeInput& input) {
  if (input.op != 3 && input.op != 5) return 0;
  const auto rank = static_cast<Index>(input.shape.size());
  const Index axis = axis_of_pieces(input);
  if (axis < -rank || axis >= rank) return 0;
  const std::size_t n = input.shape[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)];
  const std::size_t k = unsigned_arg(input, 0);  // split_size or chunks
  if (k == 0) return 0;
  if (n == 0) return input.op == 5 ? k : 1;
  const std::size_t size = input.op == 3 ? k : n / k + (n % k != 0);
  return n / size + (n % size != 0);
}

// Inputs that would make more pieces than this are skipped, unless they ask for so many (2^36 and
// up: terabytes of tensors) that the library must refuse them.
constexpr std::size_t kMaxPieces = 4096;
constexpr std::size_t kRefusedPieces = std::size_t{1} << 36;

std::vector<Tensor<double>> run_op(const fuzz::ShapeInput& input, const Tensor<double>& x) {
  const auto arg = [&](std::size_t i) { return unsigned_arg(input, i); };
  const auto index = [&](std::size_t i) { return signed_arg(input, i); };
  std::vector<Index> dims;
  for (std::size_t i = 0; i < input.arguments.size(); ++i) dims.push_back(index(i));
  switch (input.op) {
    case 0: return {reshape(x, dims)};
    case 1: return {view(x, dims)};
    case 2: return {expand(x, dims)};
    case 3: return split(x, static_cast<std::size_t>(arg(0)), axis_of_pieces(input));
    case 4: {  // axis, then the sizes
      std::vector<std::size_t> sizes;
      for (std::size_t i = 1; i < input.arguments.size(); ++i) sizes.push_back(static_cast<std::size_t>(arg(i)));
      return split(x, sizes, axis_of_pieces(input));
    }
    case 5: return chunk(x, static_cast<std::size_t>(arg(0)), axis_of_pieces(input));
    case 6: return {narrow(x, index(0), index(1), index(2))};
    default: return {slice(x, index(0), index(1), index(2), index(3))};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::ShapeInput input = fuzz::decode_shape_input({reinterpret_cast<const char*>(data), size});
  Tensor<double> x;
  try {
    x = Tensor<double>::zeros(input.shape, /*requires_grad=*/true);
  } catch (const Error&) {
    return 0;  // a shape no tensor may have
  }
  // 0, 1, 2, ...: every element says where it came from.
  for (std::size_t i = 0; i < x.numel(); ++i) x.mutable_value().data()[i] = static_cast<double>(i);

  if (const std::size_t pieces = piece_count(input); pieces > kMaxPieces && pieces < kRefusedPieces) return 0;

  GradientTape tape;
  std::vector<Tensor<double>> outputs;
  try {
    outputs = run_op(input, x);
  } catch (const Error&) {
    return 0;
  }
  for (const auto& out : outputs) {
    std::size_t numel = 0;
    require(exact_numel(out.shape(), numel), "the result's sizes multiply without overflow", input);
    require(numel == out.value().size() && numel == out.value().storage().size(),
            "the result's shape matches its storage", input);
  }
  if (input.op <= 1) {
    require(std::equal(x.value().begin(), x.value().end(), outputs[0].value().storage().begin()),
            "reshape keeps the elements in order", input);
  }
  if ((input.op == 3 || input.op == 4 || input.op == 5) && !outputs.empty()) {
    require(concat(outputs, axis_of_pieces(input)).value() == x.value(), "the pieces join back into the input", input);
  }

  // One scalar from every result, so that each result's backward runs.
  Tensor<double> total = Tensor<double>::zeros({});
  for (const auto& out : outputs) total = total + sum(out);
  if (total.requires_grad()) {
    tape.backward(total);
    require(x.has_grad() && x.grad().shape() == x.value().shape(), "the input's gradient has its shape", input);
  }
  return 0;
}
