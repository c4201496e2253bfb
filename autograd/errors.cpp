#include "autograd/errors.h"

#include <sstream>

namespace tapegrad {

std::string format_shape(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace tapegrad

#include "autograd/detail/checks.h"

namespace tapegrad::detail {

std::size_t normalize_axis(Index axis, std::size_t ndim, std::string_view op, const Shape& shape) {
  const auto n = static_cast<Index>(ndim);
  const Index a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n) {
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for a tensor of shape " +
                     format_shape(shape) + " (" + std::to_string(ndim) + " dims)");
  }
  return static_cast<std::size_t>(a);
}

const Shape& allocatable(const Shape& shape, std::size_t element_size, std::string_view op) {
  const std::size_t limit = (std::size_t{1} << 48) / element_size;  // 256 TiB
  std::size_t n = 1;
  for (std::size_t d : shape) {
    if (d != 0 && n > limit / d) {
      throw ValueError(std::string(op) + ": shape " + format_shape(shape) +
                       " has more elements than fit in memory (a negative size converted to size_t?)");
    }
    n *= d;
  }
  return shape;
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace tapegrad::detail
