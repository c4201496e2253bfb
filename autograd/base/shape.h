#pragma once
// The types every floor speaks: a shape, a signed index (axes and sizes as users write them,
// negative from the end), and the one way a shape is printed in messages.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tapegrad {

using Shape = std::vector<std::size_t>;
using Index = std::int64_t;

// Elements of an array of this shape, unchecked (base/checks.h's checked_numel throws on overflow).
inline std::size_t shape_product(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) n *= s;
  return n;
}

// "[2,3,4]" — the one way shapes are printed in messages.
std::string format_shape(const Shape& shape);

template <class ShapeLike>
std::string format_shape(const ShapeLike& shape) {
  return format_shape(Shape(shape.begin(), shape.end()));
}

}  // namespace tapegrad
