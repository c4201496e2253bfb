#pragma once
// The shape fuzzer's input format, decoded by fuzz_shapes.cpp and encoded by make_seed_corpus.cpp:
//
//   <op> <rank> <size code> ... <count> <argument code> ...
//
// op % 8 picks reshape, view, expand, split (one size), split (sizes), chunk, narrow or slice; the
// rank byte is read % 5 (0-4 dims), the count byte % 6 (0-5 arguments). A size or argument code
// reads through kPalette: small values (0-5) keep real tensors tiny, and the others are the sizes
// whose arithmetic wraps (2^40, 2^62 + 1, 2^63, SIZE_MAX, ...): any nonzero product that includes
// one is at least 2^40 elements (8 TiB of double), more than a machine holds, so every shape is
// either small or must be refused, never allocated. Arguments are read as std::int64_t (-1 infers, -5 and
// 2^63 - 1 are out of range) and as std::size_t (SIZE_MAX for a -1 passed as unsigned). Bytes
// past the end read as 0.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/base/errors.h"

namespace tapegrad::fuzz {

inline constexpr std::uint64_t kPalette[] = {
    0, 1, 2, 3, 4, 5, std::uint64_t(-1),  // -1 as Index: inferred / kept; as size_t: SIZE_MAX
    std::uint64_t(-5), std::uint64_t(1) << 40, (std::uint64_t(1) << 62) + 1,
    std::uint64_t(1) << 63, (std::uint64_t(1) << 63) - 1, std::uint64_t(-4),  // SIZE_MAX - 3
};
inline constexpr std::size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

struct ShapeInput {
  unsigned op = 0;
  Shape shape;                           // the input tensor's
  std::vector<std::uint64_t> arguments;  // the op's target shape, sizes or (axis, start, ...)
};

inline ShapeInput decode_shape_input(std::string_view bytes) {
  std::size_t pos = 0;
  const auto next = [&]() -> unsigned { return pos < bytes.size() ? static_cast<unsigned char>(bytes[pos++]) : 0u; };
  ShapeInput input;
  input.op = next() % 8;
  input.shape.resize(next() % 5);
  for (std::size_t& dim : input.shape) dim = kPalette[next() % kPaletteSize];
  input.arguments.resize(next() % 6);
  for (std::uint64_t& a : input.arguments) a = kPalette[next() % kPaletteSize];
  return input;
}

// The palette index of `value` (which must be in the palette).
inline char palette_code(std::uint64_t value) {
  for (std::size_t i = 0; i < kPaletteSize; ++i)
    if (kPalette[i] == value) return static_cast<char>(i);
  throw std::invalid_argument("palette_code: " + std::to_string(value) + " is not in the palette");
}

inline std::string encode_shape_input(unsigned op, const Shape& shape, const std::vector<std::uint64_t>& arguments) {
  std::string bytes{static_cast<char>(op), static_cast<char>(shape.size())};
  for (std::size_t dim : shape) bytes.push_back(palette_code(dim));
  bytes.push_back(static_cast<char>(arguments.size()));
  for (std::uint64_t a : arguments) bytes.push_back(palette_code(a));
  return bytes;
}

}  // namespace tapegrad::fuzz
