#include "nn/head_width.h"

#include <string>

#include "autograd/base/errors.h"

namespace tapegrad::nn {

std::size_t head_width(std::size_t d_model, std::size_t heads, const char* heads_name) {
  if (heads == 0 || d_model == 0 || d_model % heads != 0) {
    throw ValueError("MultiHeadAttention: d_model (" + std::to_string(d_model) + ") must be a positive multiple of " +
                     heads_name + " (" + std::to_string(heads) + ")");
  }
  return d_model / heads;
}

}  // namespace tapegrad::nn
