#pragma once
// The number a study function's callback computes, with nothing recorded: what the interventions
// and the patching functions run once per edit or slice.
#include <string>

#include "autograd/core/tape.h"
#include "study/attention_capture.h"

namespace tapegrad::study {

// The single element `run` returns, run under NoGradGuard. ValueError naming `who` when it is not
// one element, calling it by `callback` and `noun` ("run_loss", "loss").
template <class T>
double metric_without_tape(const RunLoss<T>& run, const std::string& who, const std::string& callback,
                           const std::string& noun) {
  NoGradGuard no_grad;
  const Tensor<T> value = run();
  require_defined(value, who, "the " + noun + " " + callback + " returned");
  if (value.numel() != 1) {
    throw ValueError(who + ": " + callback + " must return a single-element " + noun + ", got shape " +
                     format_shape(value.shape()));
  }
  return double(value.item());
}

}  // namespace tapegrad::study
