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

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace tapegrad::detail
