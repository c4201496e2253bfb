#pragma once
// The width of one attention head, d_k = d_model / heads, shared by the three reference families'
// MultiHeadAttention constructors. Each reference design names the head count differently (labml `heads`,
// mha `n_heads`, transformer `h`), so the error message uses the caller's name for it.
#include <cstddef>

namespace tapegrad::nn {

// d_model / heads; ValueError "MultiHeadAttention: d_model (D) must be a positive multiple of
// <heads_name> (H)" unless heads > 0 and d_model is a positive multiple of heads.
std::size_t head_width(std::size_t d_model, std::size_t heads, const char* heads_name);

}  // namespace tapegrad::nn
