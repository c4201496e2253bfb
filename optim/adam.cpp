#include "optim/adam.h"

#include <cmath>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "autograd/detail/checks.h"

namespace tapegrad::optim {

namespace {

AdamOptions as_adam(const AdamWOptions& o) { return {o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad}; }

void check(const AdamOptions& o, const char* name) {
  const auto [b1, b2] = o.betas;
  if (!(b1 >= 0.0 && b1 < 1.0) || !(b2 >= 0.0 && b2 < 1.0)) {
    throw ValueError(std::string(name) + ": betas must be in [0, 1), got (" + detail::format_number(b1) + ", " +
                     detail::format_number(b2) + ")");
  }
  if (!(o.eps >= 0.0) || !std::isfinite(o.eps)) {
    throw ValueError(std::string(name) + ": eps must be finite and >= 0, got " + detail::format_number(o.eps));
  }
}

template <class T>
std::vector<ParamGroup<T>> one_group(NamedParameters<T> params, double lr, double weight_decay) {
  return {ParamGroup<T>{std::move(params), lr, weight_decay}};
}

}  // namespace

template <class T>
Adam<T>::Adam(std::vector<ParamGroup<T>> groups, const AdamOptions& options, bool decoupled_weight_decay)
    : Optimizer<T>(std::move(groups), decoupled_weight_decay ? "AdamW" : "Adam"),
      options_(options),
      decoupled_(decoupled_weight_decay) {
  check(options, decoupled_weight_decay ? "AdamW" : "Adam");
}

template <class T>
Adam<T>::Adam(NamedParameters<T> params, const AdamOptions& options)
    : Adam(one_group(std::move(params), options.lr, options.weight_decay), options, false) {}

template <class T>
Adam<T>::Adam(std::vector<ParamGroup<T>> groups, const AdamOptions& options) : Adam(std::move(groups), options, false) {}

template <class T>
AdamW<T>::AdamW(NamedParameters<T> params, const AdamWOptions& options)
    : Adam<T>(one_group(std::move(params), options.lr, options.weight_decay), as_adam(options), true) {}

template <class T>
AdamW<T>::AdamW(std::vector<ParamGroup<T>> groups, const AdamWOptions& options)
    : Adam<T>(std::move(groups), as_adam(options), true) {}

template <class T>
void Adam<T>::update(const ParamGroup<T>& group, Tensor<T>& param, const xt::xarray<T>& grad, std::size_t step,
                     StateMap<T>& buffers) {
  const std::size_t n = grad.size();
  const auto shape = grad.shape();
  for (const char* name : {"exp_avg", "exp_avg_sq"}) {
    if (!buffers.count(name)) buffers[name] = xt::zeros<T>(shape);
  }
  if (options_.amsgrad && !buffers.count("max_exp_avg_sq")) buffers["max_exp_avg_sq"] = xt::zeros<T>(shape);

  // Scalars in double, as PyTorch computes them on the host.
  const double beta1 = options_.betas.first, beta2 = options_.betas.second;
  const double lr = group.lr, wd = group.weight_decay, eps = options_.eps;
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step)));
  const T step_size = static_cast<T>(lr / bias_correction1);
  const T decay = static_cast<T>(1.0 - lr * wd);
  const bool l2 = !decoupled_ && wd != 0.0, decoupled = decoupled_ && wd != 0.0, amsgrad = options_.amsgrad;

  T* p = param.mutable_value().data();
  const T* g = grad.data();
  T* m = buffers["exp_avg"].data();
  T* v = buffers["exp_avg_sq"].data();
  T* v_max = amsgrad ? buffers["max_exp_avg_sq"].data() : nullptr;
  // Every element is independent: the fixed partition keeps results identical at any thread count.
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 1 << 14), [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t i = r.begin(); i < r.end(); ++i) {
      const T gi = l2 ? g[i] + static_cast<T>(wd) * p[i] : g[i];
      if (decoupled) p[i] *= decay;
      m[i] = static_cast<T>(beta1) * m[i] + static_cast<T>(1.0 - beta1) * gi;
      v[i] = static_cast<T>(beta2) * v[i] + static_cast<T>(1.0 - beta2) * gi * gi;
      T second = v[i];
      if (amsgrad) second = v_max[i] = std::max(v_max[i], v[i]);
      const T denom = std::sqrt(second) / static_cast<T>(bias_correction2_sqrt) + static_cast<T>(eps);
      p[i] -= step_size * m[i] / denom;
    }
  });
}

template class Adam<float>;
template class Adam<double>;
template class AdamW<float>;
template class AdamW<double>;

}  // namespace tapegrad::optim
