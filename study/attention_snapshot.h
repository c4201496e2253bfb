#pragma once
// A snapshot of the attention of a model at one training step: A, dL/dA, S and dL/dS of every
// attention call for one fixed probe batch, the data a user scrubs through to watch attention
// patterns form (e.g. the diagonal of the copy task emerging). Made from an AttentionCapture
// (study/attention_capture.h).
#include <cstddef>
#include <string>
#include <vector>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

namespace tapegrad::study {

struct AttentionSnapshot {
  std::size_t step = 0;  // optimiser steps taken when it was made
  double loss = 0;       // the probe batch's loss at that step
  // Per attention call, in forward order: its record name (AttentionRecord::name), A, dL/dA, S
  // and dL/dS, each [batch, heads, seq_q, seq_k] for the probe batch. scores and scores_grad are
  // empty in a snapshot read from a version 1 file, which kept A and dL/dA only.
  std::vector<std::string> names;
  std::vector<xt::xarray<float>> weights, weights_grad, scores, scores_grad;
};

}  // namespace tapegrad::study
