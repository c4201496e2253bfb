#pragma once
// The einsum fuzzer's input format, decoded by fuzz_einsum.cpp and encoded by
// make_seed_corpus.cpp:
//
//   <subscripts> '\0' <flags> then per operand: <rank> <dim> ... <dim>
//
// flags % 3 + 1 is the number of operands (1-3); flags & 0x80 passes operand 0 again as operand 1
// (when their shapes agree), so that one tensor reached twice is fuzzed too. A rank byte is read
// % 7 (0-6 dims) and a dim byte % 5 (sizes 0-4): shapes stay small enough for a naive reference,
// while empty and size-1 axes stay reachable. Bytes past the end read as 0; an input without
// '\0' is all subscripts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/base/errors.h"

namespace tapegrad::fuzz {

struct EinsumInput {
  std::string subscripts;
  std::vector<Shape> shapes;
  bool alias = false;  // operand 1 is operand 0
};

inline EinsumInput decode_einsum_input(std::string_view bytes) {
  EinsumInput input;
  const std::size_t end = bytes.find('\0');
  input.subscripts = std::string(bytes.substr(0, end));
  std::size_t pos = end == std::string_view::npos ? bytes.size() : end + 1;
  const auto next = [&]() -> unsigned { return pos < bytes.size() ? static_cast<unsigned char>(bytes[pos++]) : 0u; };
  const unsigned flags = next();
  input.shapes.resize(flags % 3 + 1);
  for (Shape& shape : input.shapes) {
    shape.resize(next() % 7);
    for (std::size_t& dim : shape) dim = next() % 5;
  }
  input.alias = (flags & 0x80) != 0 && input.shapes.size() >= 2 && input.shapes[0] == input.shapes[1];
  return input;
}

inline std::string encode_einsum_input(std::string_view subscripts, const std::vector<Shape>& shapes,
                                       bool alias = false) {
  std::string bytes(subscripts);
  bytes.push_back('\0');
  bytes.push_back(static_cast<char>((shapes.size() - 1) | (alias ? 0x80 : 0)));
  for (const Shape& shape : shapes) {
    bytes.push_back(static_cast<char>(shape.size()));
    for (std::size_t dim : shape) bytes.push_back(static_cast<char>(dim));
  }
  return bytes;
}

}  // namespace tapegrad::fuzz
