#pragma once
// Learning-rate schedules as objects, with torch.optim.lr_scheduler.LambdaLR's semantics: each
// group's lr = its initial lr * factor(epoch), where epoch counts scheduler.step() calls and
// starts at 0 (set at construction).
//
// The Annotated Transformer: Adam(lr = 1.0, betas (0.9, 0.98), eps 1e-9) under
//   LRScheduler(opt, noam(d_model, factor, warmup)),
// so the lr is rate(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
// (step 0 is taken as 1).
#include <cstddef>
#include <functional>
#include <vector>

#include "optim/optimizer.h"

namespace tapegrad::optim {

using LrFactor = std::function<double(std::size_t step)>;

// The Annotated Transformer's rate(step, model_size, factor, warmup).
LrFactor noam(std::size_t model_size, double factor, std::size_t warmup);
// gamma^(step / step_size) (StepLR).
LrFactor step_decay(std::size_t step_size, double gamma);
// min_factor + (1 - min_factor) * (1 + cos(pi * min(step, total) / total)) / 2 (CosineAnnealingLR
// with eta_min = min_factor * initial lr).
LrFactor cosine(std::size_t total_steps, double min_factor = 0.0);

template <class T>
class LRScheduler {
 public:
  LRScheduler(Optimizer<T>& optimizer, LrFactor factor);
  // Advances one step and sets every group's lr to its initial lr times the factor. A group's
  // initial lr is its lr when the scheduler first sees it: at construction, or for a group added
  // to the optimiser later (add_param_group), at the next step.
  void step();
  std::size_t last_step() const { return step_; }
  double last_lr(std::size_t group = 0) const;

 private:
  void apply();
  Optimizer<T>& optimizer_;
  LrFactor factor_;
  std::vector<double> initial_lr_;
  std::size_t step_ = 0;
};

extern template class LRScheduler<float>;
extern template class LRScheduler<double>;

}  // namespace tapegrad::optim
