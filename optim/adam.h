#pragma once
// Adam and AdamW with PyTorch's update rule (torch.optim.Adam / AdamW, single-tensor path):
//   g = grad (+ weight_decay * p for Adam: L2 added to the gradient)
//   p = p * (1 - lr * weight_decay)                 (AdamW: decoupled decay, applied first)
//   m = beta1 * m + (1 - beta1) * g,  v = beta2 * v + (1 - beta2) * g^2
//   v_max = max(v_max, v)                          (amsgrad; then v_max replaces v below)
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// eps is added outside the square root. Buffers: exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad).
#include <utility>

#include "optim/optimizer.h"

namespace tapegrad::optim {

// Adam's and AdamW's options: the same fields, and PyTorch's defaults, but for weight_decay's
// (0 for Adam's L2 term, 1e-2 for AdamW's decoupled decay). Aggregates, so designated
// initialisers work: Adam<float>(params, {.lr = 1e-4, .betas = {0.9, 0.98}, .eps = 1e-9}).
// The default weight decay comes in a type, not as a `double` template argument: clang 14 (the
// sanitizer and fuzzer builds' compiler) does not take floating-point template arguments.
template <class Defaults>
struct AdamFamilyOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = Defaults::weight_decay;
  bool amsgrad = false;
};
struct AdamDefaults {
  static constexpr double weight_decay = 0.0;
};
struct AdamWDefaults {
  static constexpr double weight_decay = 1e-2;
};
using AdamOptions = AdamFamilyOptions<AdamDefaults>;
using AdamWOptions = AdamFamilyOptions<AdamWDefaults>;

template <class T>
class Adam : public Optimizer<T> {
 public:
  Adam(NamedParameters<T> params, const AdamOptions& options = {});
  // Groups carry their own lr and weight_decay; the rest comes from options.
  Adam(std::vector<ParamGroup<T>> groups, const AdamOptions& options = {});

 protected:
  Adam(std::vector<ParamGroup<T>> groups, const AdamOptions& options, bool decoupled_weight_decay);
  void update(const ParamGroup<T>& group, Tensor<T>& param, const xt::xarray<T>& grad, std::size_t step,
              StateMap<T>& buffers) override;
  std::vector<std::string> buffer_names() const override;

 private:
  AdamOptions options_;
  bool decoupled_;
};

template <class T>
class AdamW : public Adam<T> {
 public:
  AdamW(NamedParameters<T> params, const AdamWOptions& options = {});
  AdamW(std::vector<ParamGroup<T>> groups, const AdamWOptions& options = {});
};

extern template class Adam<float>;
extern template class Adam<double>;
extern template class AdamW<float>;
extern template class AdamW<double>;

}  // namespace tapegrad::optim
