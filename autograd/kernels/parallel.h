#pragma once
// The one threading runtime is TBB. OpenBLAS runs single-threaded inside TBB tasks (see blas.cpp).
#include <cstddef>

namespace tapegrad {

// Caps the worker threads of every parallel kernel (tbb::global_control); 0 restores the default
// (all cores); more than 2^20 is a ValueError (a negative int converted to size_t). Results do not
// depend on it: kernels split work in fixed chunks.
void set_num_threads(std::size_t n);
std::size_t num_threads();

}  // namespace tapegrad
