#pragma once
// Runs one sample through its dispatch row and compares with PyTorch: every output, then the
// gradient of sum(out * G) with respect to every float64 input, each element within 1e-10
// relative (see compare.h).
#include <string>

#include "dispatch.h"
#include "sample_file.h"

namespace tapegrad::pytorch_samples {

struct Outcome {
  bool passed = false;
  std::string why;  // when not: what differs, what tapegrad threw, or what it lacks
};

Outcome run_sample(const Sample& sample, const Row& row);

}  // namespace tapegrad::pytorch_samples
