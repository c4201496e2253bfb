#pragma once
// clip_grad_norm: torch.nn.utils.clip_grad_norm_. Computes the total norm of all gradients (as if
// concatenated; norm_type 2 or infinity), scales every gradient by max_norm / (total + 1e-6) when
// that is below 1, and returns the total norm before clipping. Parameters without gradient are
// skipped.
#include <vector>

#include "autograd/core/tensor.h"

namespace tapegrad::optim {

template <class T>
double clip_grad_norm(const std::vector<Tensor<T>>& params, double max_norm, double norm_type = 2.0);

}  // namespace tapegrad::optim
