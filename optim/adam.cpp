#include "optim/adam.h"

#include <algorithm>
#include <cmath>

#include <xsimd/xsimd.hpp>

#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/base/checks.h"

namespace tapegrad::optim {

namespace {

AdamOptions as_adam(const AdamWOptions& o) { return {o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad}; }

void check(const AdamOptions& o, const char* name) {
  const auto [b1, b2] = o.betas;
  if (!(b1 >= 0.0 && b1 < 1.0) || !(b2 >= 0.0 && b2 < 1.0)) {
    throw ValueError(std::string(name) + ": betas must be in [0, 1), got (" + format_number(b1) + ", " +
                     format_number(b2) + ")");
  }
  if (!(o.eps >= 0.0) || !std::isfinite(o.eps)) {
    throw ValueError(std::string(name) + ": eps must be finite and >= 0, got " + format_number(o.eps));
  }
}

// Elements per task of the update.
constexpr std::size_t kAdamChunk = 1 << 14;

// The update's scalars, in the element type.
template <class T>
struct AdamCoefficients {
  T beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, step_size, eps, weight_decay, decay;
  bool l2, decoupled, amsgrad;
};

// Parameter, gradient and moment buffers (max_exp_avg_sq only with amsgrad).
template <class T>
struct AdamSpans {
  T* p;
  const T* g;
  T *m, *v, *v_max;
};

// The rule of adam.h for one element or one xsimd batch of elements (V is T or a batch).
template <class T, class V>
void adam_element(const AdamCoefficients<T>& c, V& p, V g, V& m, V& v, V& v_max) {
  using std::max;
  using std::sqrt;
  if (c.l2) g = g + c.weight_decay * p;
  if (c.decoupled) p = p * c.decay;
  m = c.beta1 * m + c.one_minus_beta1 * g;
  v = c.beta2 * v + c.one_minus_beta2 * g * g;
  V second = v;
  if (c.amsgrad) second = v_max = max(v_max, v);
  p = p - c.step_size * m / (sqrt(second) / c.bias_correction2_sqrt + c.eps);
}

// Elements [begin, end): whole xsimd batches, then a scalar tail.
template <class T>
void adam_range(const AdamCoefficients<T>& c, const AdamSpans<T>& s, std::size_t begin, std::size_t end) {
  using Batch = xsimd::batch<T>;
  std::size_t i = begin;
  for (; i + Batch::size <= end; i += Batch::size) {
    Batch p = Batch::load_unaligned(s.p + i), m = Batch::load_unaligned(s.m + i), v = Batch::load_unaligned(s.v + i);
    Batch v_max = c.amsgrad ? Batch::load_unaligned(s.v_max + i) : v;
    adam_element(c, p, Batch::load_unaligned(s.g + i), m, v, v_max);
    p.store_unaligned(s.p + i);
    m.store_unaligned(s.m + i);
    v.store_unaligned(s.v + i);
    if (c.amsgrad) v_max.store_unaligned(s.v_max + i);
  }
  for (; i < end; ++i) {
    T v_max = c.amsgrad ? s.v_max[i] : s.v[i];
    adam_element(c, s.p[i], s.g[i], s.m[i], s.v[i], v_max);
    if (c.amsgrad) s.v_max[i] = v_max;
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
  if (buffers.empty()) {
    for (const auto& name : buffer_names()) buffers[name] = xt::zeros<T>(grad.shape());
  }

  // Scalars in double, as PyTorch computes them on the host.
  const double beta1 = options_.betas.first, beta2 = options_.betas.second;
  const double lr = group.lr, wd = group.weight_decay;
  AdamCoefficients<T> c;
  c.beta1 = static_cast<T>(beta1);
  c.one_minus_beta1 = static_cast<T>(1.0 - beta1);
  c.beta2 = static_cast<T>(beta2);
  c.one_minus_beta2 = static_cast<T>(1.0 - beta2);
  c.bias_correction2_sqrt = static_cast<T>(std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step))));
  c.step_size = static_cast<T>(lr / (1.0 - std::pow(beta1, static_cast<double>(step))));
  c.eps = static_cast<T>(options_.eps);
  c.weight_decay = static_cast<T>(wd);
  c.decay = static_cast<T>(1.0 - lr * wd);
  c.l2 = !decoupled_ && wd != 0.0;
  c.decoupled = decoupled_ && wd != 0.0;
  c.amsgrad = options_.amsgrad;

  AdamSpans<T> spans{param.mutable_value().data(), grad.data(), buffers["exp_avg"].data(),
                     buffers["exp_avg_sq"].data(), c.amsgrad ? buffers["max_exp_avg_sq"].data() : nullptr};
  // Every element is independent; fixed chunks (not TBB's adaptive split) put each element in the
  // same place of the vector/tail split at any thread count, so results are identical.
  const std::size_t chunks = (n + kAdamChunk - 1) / kAdamChunk;
  kernels::parallel_items(chunks, kAdamChunk, [&](std::size_t first, std::size_t last) {
    for (std::size_t chunk = first; chunk < last; ++chunk)
      adam_range(c, spans, chunk * kAdamChunk, std::min(n, (chunk + 1) * kAdamChunk));
  });
}

template <class T>
std::vector<std::string> Adam<T>::buffer_names() const {
  if (options_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

template class Adam<float>;
template class Adam<double>;
template class AdamW<float>;
template class AdamW<double>;

}  // namespace tapegrad::optim
