#include "optim/clip.h"

#include <cmath>
#include <limits>

namespace tapegrad::optim {

template <class T>
double clip_grad_norm(const std::vector<Tensor<T>>& params, double max_norm, double norm_type) {
  const bool infinity = std::isinf(norm_type);
  if (!infinity && norm_type != 2.0) {
    throw ValueError("clip_grad_norm: norm_type must be 2 or infinity, got " + std::to_string(norm_type));
  }
  if (!(max_norm >= 0.0)) throw ValueError("clip_grad_norm: max_norm must be >= 0, got " + std::to_string(max_norm));
  double total = 0.0;
  for (const auto& p : params) {
    if (!p.has_grad()) continue;
    for (const T g : p.grad()) {
      const double a = std::abs(static_cast<double>(g));
      total = infinity ? std::max(total, a) : total + a * a;
    }
  }
  if (!infinity) total = std::sqrt(total);
  const double coefficient = max_norm / (total + 1e-6);
  if (coefficient < 1.0) {
    for (const auto& p : params) {
      if (p.has_grad()) p.node()->grad.value() *= static_cast<T>(coefficient);
    }
  }
  return total;
}

template double clip_grad_norm<float>(const std::vector<Tensor<float>>&, double, double);
template double clip_grad_norm<double>(const std::vector<Tensor<double>>&, double, double);

}  // namespace tapegrad::optim
