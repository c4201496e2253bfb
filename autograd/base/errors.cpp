#include "autograd/base/errors.h"

#include <string>

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
