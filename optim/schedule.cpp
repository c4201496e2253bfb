#include "optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/base/checks.h"

namespace tapegrad::optim {

namespace {
// ValueError unless value is finite and in [0, high] (NaN fails).
void check_factor(const char* op, const char* what, double value,
                  double high = std::numeric_limits<double>::infinity()) {
  if (!(value >= 0.0 && value <= high) || !std::isfinite(value)) {
    const std::string range = std::isinf(high) ? "finite and >= 0" : "in [0, " + format_number(high) + "]";
    throw ValueError(std::string(op) + ": " + what + " must be " + range + ", got " + format_number(value));
  }
}
}  // namespace

LrFactor noam(std::size_t model_size, double factor, std::size_t warmup) {
  if (model_size == 0 || warmup == 0) {
    throw ValueError("noam: model_size and warmup must be positive, got " + std::to_string(model_size) + " and " +
                     std::to_string(warmup));
  }
  check_factor("noam", "factor", factor);
  return [=](std::size_t step) {
    const double s = static_cast<double>(std::max<std::size_t>(step, 1));
    return factor * std::pow(static_cast<double>(model_size), -0.5) *
           std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(warmup), -1.5));
  };
}

LrFactor step_decay(std::size_t step_size, double gamma) {
  if (step_size == 0) throw ValueError("step_decay: step_size must be positive");
  check_factor("step_decay", "gamma", gamma);
  return [=](std::size_t step) { return std::pow(gamma, static_cast<double>(step / step_size)); };
}

LrFactor cosine(std::size_t total_steps, double min_factor) {
  if (total_steps == 0) throw ValueError("cosine: total_steps must be positive");
  check_factor("cosine", "min_factor", min_factor, 1.0);
  return [=](std::size_t step) {
    const double t = static_cast<double>(std::min(step, total_steps)) / static_cast<double>(total_steps);
    return min_factor + (1.0 - min_factor) * (1.0 + std::cos(std::numbers::pi * t)) / 2.0;
  };
}

template <class T>
LRScheduler<T>::LRScheduler(Optimizer<T>& optimizer, LrFactor factor) : optimizer_(optimizer), factor_(std::move(factor)) {
  if (!factor_) throw ValueError("LRScheduler: the factor function is empty");
  apply();
}

template <class T>
void LRScheduler<T>::step() {
  ++step_;
  apply();
}

template <class T>
void LRScheduler<T>::apply() {
  const double f = factor_(step_);
  // A NaN or negative rate would otherwise reach the parameters silently.
  if (!std::isfinite(f) || f < 0.0) {
    throw ValueError("LRScheduler: the factor at step " + std::to_string(step_) + " is " + format_number(f) +
                     "; it must be finite and >= 0");
  }
  const auto groups = optimizer_.param_groups();
  for (std::size_t i = initial_lr_.size(); i < groups.size(); ++i) initial_lr_.push_back(groups[i].lr);
  for (std::size_t i = 0; i < groups.size(); ++i) groups[i].lr = initial_lr_[i] * f;
}

template <class T>
double LRScheduler<T>::last_lr(std::size_t group) const {
  const auto groups = optimizer_.param_groups();
  if (group >= groups.size()) {
    throw ValueError("LRScheduler::last_lr: group " + std::to_string(group) + " is out of range for " +
                     std::to_string(groups.size()) + " group(s)");
  }
  return groups[group].lr;
}

template class LRScheduler<float>;
template class LRScheduler<double>;

}  // namespace tapegrad::optim
