#include "optim/clip.h"

#include <cmath>
#include <limits>

#include "autograd/base/checks.h"

namespace tapegrad::optim {

template <class T>
double clip_grad_norm(const std::vector<Tensor<T>>& params, double max_norm, double norm_type) {
  const bool infinity = norm_type == std::numeric_limits<double>::infinity();
  if (!infinity && norm_type != 2.0) {
    throw ValueError("clip_grad_norm: norm_type must be 2 or infinity, got " + format_number(norm_type));
  }
  if (!(max_norm >= 0.0))
    throw ValueError("clip_grad_norm: max_norm must be >= 0, got " + format_number(max_norm));
  for (std::size_t i = 0; i < params.size(); ++i)
    require_defined(params[i], "clip_grad_norm", "parameter " + std::to_string(i));
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
